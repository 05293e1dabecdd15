//! The order in which the BPF side scans CPUs (cpu_near() in
//! src/bpf/fastpath.bpf.h): every CPU id grouped by NUMA node, then LLC,
//! then core, and for each CPU the block of that list that each of its
//! levels covers.

use anyhow::{Context, Result};

use crate::bpf_intf;

const LEVELS: usize = bpf_intf::fp_consts_FP_TOPO_LEVELS as usize;

/// Where a CPU sits: its node, LLC and core, as ids that are equal for CPUs
/// that share one. `None` for a CPU id that the topology does not list
/// (offline now, or not possible).
pub type Place = Option<(usize, usize, usize)>;

/// One CPU's entry of the layout (struct fp_topo).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTopo {
    pub pos: u16,
    pub base: [u16; LEVELS],
    pub span: [u16; LEVELS],
}

/// The scan layout of CPU ids 0..places.len(): the list of every id in
/// topology order, each CPU's entry, and how many LLCs the listed CPUs
/// have. A CPU the topology does not list comes last, a core, LLC and node
/// of its own.
pub struct Layout {
    pub cpus: Vec<u16>,
    pub topo: Vec<CpuTopo>,
    pub nr_llcs: usize,
}

pub fn layout(places: &[Place]) -> Layout {
    // Sort key: listed CPUs first by (node, llc, core, id), then the rest.
    let mut cpus: Vec<usize> = (0..places.len()).collect();
    cpus.sort_by_key(|&c| match places[c] {
        Some((node, llc, core)) => (0, node, llc, core, c),
        None => (1, 0, 0, 0, c),
    });
    // A level's key for a CPU: CPUs that share it share a block.
    let key = |c: usize, level: usize| -> (usize, usize, usize, usize) {
        match places[c] {
            Some((node, llc, core)) => match level {
                0 => (0, node, llc, core),
                1 => (0, node, llc, usize::MAX),
                _ => (0, node, usize::MAX, usize::MAX),
            },
            None => (1, c, 0, 0),
        }
    };
    let mut topo = vec![CpuTopo::default(); places.len()];
    for level in 0..LEVELS {
        let mut start = 0;
        while start < cpus.len() {
            let k = key(cpus[start], level);
            let end = start
                + cpus[start..]
                    .iter()
                    .take_while(|&&c| key(c, level) == k)
                    .count();
            for &c in &cpus[start..end] {
                topo[c].base[level] = start as u16;
                topo[c].span[level] = (end - start) as u16;
            }
            start = end;
        }
    }
    for (pos, &c) in cpus.iter().enumerate() {
        topo[c].pos = pos as u16;
    }
    let nr_llcs = places
        .iter()
        .flatten()
        .map(|&(node, llc, _)| (node, llc))
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    Layout {
        cpus: cpus.into_iter().map(|c| c as u16).collect(),
        topo,
        nr_llcs,
    }
}

/// The machine's CPU ids 0..nr_cpus, placed by scx_utils' topology.
pub fn places(nr_cpus: usize) -> Result<Vec<Place>> {
    let topo = scx_utils::Topology::new().context("failed to read the CPU topology")?;
    Ok((0..nr_cpus)
        .map(|cpu| {
            topo.all_cpus
                .get(&cpu)
                .map(|c| (c.node_id, c.llc_id, c.core_id))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cpu_near() as the BPF side computes it.
    fn near(l: &Layout, cpu: usize, i: usize) -> usize {
        let t = &l.topo[cpu];
        let (mut inner, mut base, mut span) = (t.pos as usize, 0, l.cpus.len());
        for level in 0..LEVELS {
            if i < t.span[level] as usize {
                base = t.base[level] as usize;
                span = t.span[level] as usize;
                break;
            }
            inner = t.base[level] as usize;
        }
        l.cpus[base + (inner - base + i) % span] as usize
    }

    /// 2 nodes x 2 LLCs x 2 cores x 2 threads, ids interleaved the way
    /// x86 numbers SMT siblings (cpu n and n + 8 share a core), and one id
    /// the topology does not list.
    fn machine() -> Vec<Place> {
        let mut p: Vec<Place> = (0..16)
            .map(|c| {
                let core = c % 8;
                Some((core / 4, core / 2, core))
            })
            .collect();
        p.push(None);
        p
    }

    #[test]
    fn every_cpu_once_and_self_first() {
        let l = layout(&machine());
        for cpu in 0..17 {
            let order: Vec<usize> = (0..17).map(|i| near(&l, cpu, i)).collect();
            assert_eq!(order[0], cpu);
            let mut sorted = order.clone();
            sorted.sort();
            assert_eq!(sorted, (0..17).collect::<Vec<_>>(), "cpu {cpu}: {order:?}");
        }
    }

    #[test]
    fn levels_nest() {
        let l = layout(&machine());
        let p = machine();
        for cpu in 0..16 {
            let t = l.topo[cpu];
            let (node, llc, core) = p[cpu].unwrap();
            assert_eq!(t.span, [2, 4, 8]);
            for i in 0..17 {
                let c = near(&l, cpu, i);
                let same = p[c].map(|(n, l, k)| (n == node, l == llc, k == core));
                match i {
                    0..=1 => assert_eq!(same, Some((true, true, true))),
                    2..=3 => assert_eq!(same, Some((true, true, false))),
                    4..=7 => assert_eq!(same, Some((true, false, false))),
                    _ => assert!(same.is_none_or(|(n, _, _)| !n)),
                }
            }
        }
        assert_eq!(l.nr_llcs, 4);
        // The unlisted id is a block of its own at the end.
        assert_eq!(l.topo[16].span, [1, 1, 1]);
        assert_eq!(l.cpus[16], 16);
    }

    #[test]
    fn one_llc() {
        let p: Vec<Place> = (0..4).map(|c| Some((0, 0, c))).collect();
        let l = layout(&p);
        assert_eq!(l.nr_llcs, 1);
        assert_eq!(
            (0..4).map(|i| near(&l, 2, i)).collect::<Vec<_>>(),
            [2, 3, 0, 1]
        );
    }
}
