//! Fusing the two arms: reciprocal rank fusion over each arm's best
//! candidates.
//!
//! Ranks, not scores, are fused: BM25 scores grow with the query's length
//! and cosine similarities crowd into a narrow band, so neither scale means
//! anything to the other; a rank means the same in both.

use std::collections::HashMap;

use super::model::dot;

/// Candidates each arm contributes.
pub const POOL: usize = 100;

/// RRF's damping constant (the value of the original paper).
const K: f32 = 60.0;

/// Cosine similarity below which an entry is not near the query at all:
/// with "shares no term with it", the search's relevance cut.
pub const FLOOR: f32 = 0.2;

/// BM25 hits whose vectors feed back into the query.
const FEEDBACK_HITS: usize = 3;

/// How far the query moves toward them.
const FEEDBACK_WEIGHT: f32 = 0.5;

/// Pseudo-relevance feedback (Rocchio): move `query` toward the mean
/// vector of BM25's best few hits, so the words it shares with tools tell
/// the semantic arm which sense of the request is meant. Without hits the
/// query is left as it is.
pub fn feedback(query: &mut [f32], matrix: &[f32], lexical: &[(u32, f32)]) {
    let dim = query.len();
    let top: Vec<u32> = lexical.iter().take(FEEDBACK_HITS).map(|(id, _)| *id).collect();
    if top.is_empty() || dim == 0 {
        return;
    }
    let step = FEEDBACK_WEIGHT / top.len() as f32;
    for id in top {
        let row = &matrix[id as usize * dim..(id as usize + 1) * dim];
        query.iter_mut().zip(row).for_each(|(q, v)| *q += step * v);
    }
    super::model::normalise(query);
}

/// The entries (rows of `matrix`) passing `visible` nearest to `query`, best first (ties by
/// position), at most [`POOL`] of them, none below `floor`.
pub fn nearest(query: &[f32], matrix: &[f32], floor: f32, visible: impl Fn(&u32) -> bool) -> Vec<(u32, f32)> {
    if query.is_empty() {
        return Vec::new();
    }
    let mut near: Vec<(u32, f32)> = matrix
        .chunks_exact(query.len())
        .enumerate()
        .map(|(id, vector)| (id as u32, dot(query, vector)))
        .filter(|(id, similarity)| *similarity >= floor && visible(id))
        .collect();
    let by_similarity = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if near.len() > POOL {
        near.select_nth_unstable_by(POOL - 1, by_similarity);
        near.truncate(POOL);
    }
    near.sort_by(by_similarity);
    near
}

/// Reciprocal rank fusion of two rankings (best first), one vote each,
/// best first, ties broken by the lexical ranking, then by position.
///
/// The votes are equal: the semantic query the default ranking fuses has
/// been steered by [`feedback`], and so steered the semantic arm is no
/// longer the weaker one: an equal vote gives the best figures on all
/// three evaluations (BENCHMARKS.md). Unsteered, the semantic arm alone is
/// weaker and an equal vote costs BFCL recall@1 (0.744, against 0.760
/// with half a vote): that ranking is kept only as a measured arm.
pub fn reciprocal_rank(lexical: &[(u32, f32)], semantic: &[(u32, f32)]) -> Vec<(u32, f32)> {
    let mut fused: HashMap<u32, (f32, usize)> = HashMap::new();
    for (rank, (id, _)) in lexical.iter().take(POOL).enumerate() {
        fused.insert(*id, (1.0 / (K + rank as f32 + 1.0), rank));
    }
    for (rank, (id, _)) in semantic.iter().enumerate() {
        fused.entry(*id).or_insert((0.0, usize::MAX)).0 += 1.0 / (K + rank as f32 + 1.0);
    }
    let mut ranked: Vec<(u32, f32, usize)> = fused.into_iter().map(|(id, (score, rank))| (id, score, rank)).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)).then(a.0.cmp(&b.0)));
    ranked.into_iter().map(|(id, score, _)| (id, score)).collect()
}
