// Compiles the BPF scheduler into a libbpf skeleton and generates Rust
// bindings for the interface header it shares with the loader.
fn main() {
    scx_cargo::BpfBuilder::new()
        .expect("failed to set up the BPF builder")
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/main.bpf.c", "bpf")
        .build()
        .expect("failed to build the BPF scheduler");
}
