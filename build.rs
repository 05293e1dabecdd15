// Compiles the BPF scheduler into a libbpf skeleton and generates Rust
// bindings for the interface header it shares with the loader.
//
// Features that change the BPF code:
//   branch-profile   count every FP_BRANCH() site (docs/branch-profile.md)
//   no-branch-hints  compile likely()/unlikely() away, for ablation
fn main() {
    let mut builder = scx_cargo::BpfBuilder::new().expect("failed to set up the BPF builder");
    if std::env::var_os("CARGO_FEATURE_BRANCH_PROFILE").is_some() {
        builder.add_cflag("-DFP_BRANCH_PROFILE");
    }
    if std::env::var_os("CARGO_FEATURE_NO_BRANCH_HINTS").is_some() {
        builder.add_cflag("-DFP_NO_BRANCH_HINTS");
    }
    builder
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/main.bpf.c", "bpf")
        .build()
        .expect("failed to build the BPF scheduler");
}
