//! BM25 ranking of a text query over one or more catalogs. Document frequencies and the average
//! length are summed over all searched catalogs at query time, so scores are comparable across
//! servers and the result is the same as one index over the union.

use super::Candidate;
use super::index::Posting;
use super::tokenize::tokens;
use crate::catalog::Catalog;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// The `limit` best tools for `query`, best first; ties keep catalog order.
pub(crate) fn rank(catalogs: &[&Catalog], query: &str, limit: usize) -> Vec<Candidate> {
    let mut terms: Vec<String> = Vec::new();
    tokens(query, |token| {
        if !terms.contains(&token) {
            terms.push(token);
        }
    });
    let documents: usize = catalogs.iter().map(|c| c.index().len()).sum();
    if terms.is_empty() || documents == 0 {
        return Vec::new();
    }
    let total_len: f64 = catalogs.iter().map(|c| c.index().total_len).sum();
    let average_len = (total_len / documents as f64).max(f64::EPSILON) as f32;
    let idf: Vec<f32> = terms
        .iter()
        .map(|term| {
            let df: usize = catalogs.iter().map(|c| c.index().term(term).map_or(0, <[Posting]>::len)).sum();
            let n = documents as f32;
            let df = df as f32;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();

    // Min-heap of the best `limit` so far; the key orders by score, then earlier tool first.
    let mut best: BinaryHeap<Reverse<Key>> = BinaryHeap::with_capacity(limit + 1);
    let mut scores: Vec<f32> = Vec::new();
    let mut touched: Vec<u32> = Vec::new();
    for (catalog_at, catalog) in catalogs.iter().enumerate() {
        let index = catalog.index();
        scores.clear();
        scores.resize(index.len(), 0.0);
        touched.clear();
        for (term, weight) in terms.iter().zip(&idf) {
            let Some(postings) = index.term(term) else { continue };
            for posting in postings {
                let doc = posting.doc as usize;
                let norm = K1 * (1.0 - B + B * index.doc_len[doc] / average_len);
                if scores[doc] == 0.0 {
                    touched.push(posting.doc);
                }
                scores[doc] += weight * posting.tf * (K1 + 1.0) / (posting.tf + norm);
            }
        }
        for &doc in &touched {
            let key = Key { score: scores[doc as usize], catalog: catalog_at as u32, doc };
            if best.len() < limit {
                best.push(Reverse(key));
            } else if best.peek().is_some_and(|Reverse(worst)| key > *worst) {
                best.pop();
                best.push(Reverse(key));
            }
        }
    }
    let mut ranked: Vec<Key> = best.into_iter().map(|Reverse(key)| key).collect();
    ranked.sort_unstable_by(|a, b| b.cmp(a));
    ranked.into_iter().map(|key| Candidate { catalog: key.catalog as usize, tool: key.doc as usize }).collect()
}

#[derive(Debug, Clone, Copy)]
struct Key {
    score: f32,
    catalog: u32,
    doc: u32,
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    /// Greater is better: a higher score, then an earlier position.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.catalog.cmp(&self.catalog))
            .then_with(|| other.doc.cmp(&self.doc))
    }
}
