//! The stage DAG of an experiment (validate -> plan): topological order and cycle reporting.

use petgraph::algo::{tarjan_scc, toposort};
use petgraph::graph::{DiGraph, NodeIndex};

/// Stages in an order where every stage comes after the stages it needs.
///
/// `needs[i]` lists the indices that stage `i` needs. On a cycle, returns the stage indices of
/// one whole cycle, first stage repeated at the end (`a -> b -> c -> a`).
pub fn topo_order(n: usize, needs: &[Vec<usize>]) -> Result<Vec<usize>, Vec<usize>> {
    let mut g = DiGraph::<usize, ()>::with_capacity(n, n);
    let nodes: Vec<NodeIndex> = (0..n).map(|i| g.add_node(i)).collect();
    for (i, deps) in needs.iter().enumerate() {
        for &d in deps {
            g.add_edge(nodes[d], nodes[i], ());
        }
    }
    match toposort(&g, None) {
        // Ties are broken by manifest order: petgraph's toposort is deterministic for a graph
        // built in the same order, which keeps plans reproducible.
        Ok(order) => Ok(order.into_iter().map(|ix| g[ix]).collect()),
        Err(_) => Err(find_cycle(&g)),
    }
}

fn find_cycle(g: &DiGraph<usize, ()>) -> Vec<usize> {
    for scc in tarjan_scc(g) {
        let self_loop = scc.len() == 1 && g.contains_edge(scc[0], scc[0]);
        if scc.len() < 2 && !self_loop {
            continue;
        }
        // Walk inside the component from its lowest stage until a node repeats.
        let start = *scc.iter().min_by_key(|ix| g[**ix]).expect("non-empty component");
        let mut path = vec![start];
        let mut current = start;
        loop {
            let next = g
                .neighbors(current)
                .filter(|n| scc.contains(n))
                .min_by_key(|n| g[*n])
                .expect("every node of a cycle has a successor in it");
            if let Some(pos) = path.iter().position(|p| *p == next) {
                let mut cycle: Vec<usize> = path[pos..].iter().map(|ix| g[*ix]).collect();
                cycle.push(g[next]);
                return cycle;
            }
            path.push(next);
            current = next;
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_dependencies_first() {
        // 0 <- 1 <- 2, and 3 needs 0 and 2
        let order = topo_order(4, &[vec![], vec![0], vec![1], vec![0, 2]]).unwrap();
        let pos = |i| order.iter().position(|x| *x == i).unwrap();
        assert!(pos(0) < pos(1) && pos(1) < pos(2) && pos(2) < pos(3));
    }

    #[test]
    fn reports_whole_cycle() {
        // 0 needs 2, 1 needs 0, 2 needs 1: 0 -> 1 -> 2 -> 0 in "needed by" direction
        let cycle = topo_order(4, &[vec![2], vec![0], vec![1], vec![]]).unwrap_err();
        assert_eq!(cycle, vec![0, 1, 2, 0]);
        let self_loop = topo_order(2, &[vec![], vec![1]]).unwrap_err();
        assert_eq!(self_loop, vec![1, 1]);
    }
}
