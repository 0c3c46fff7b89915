//! A static token-embedding model: tokenize, look up each token's row,
//! average, normalise. No neural network runs at query time, so a text is
//! embedded in microseconds.
//!
//! The bundled table (`models/wordllama`, feature `bundled-model`) is
//! wordllama's `l2_supercat_256` table (PyPI `wordllama` 0.4.0.post1, MIT:
//! 32,000 Llama 2 tokens × 256), each row quantised to int8 with its own
//! scale; `models/wordllama/derive.py` writes it from the package. Another table in
//! the same format can be loaded from a folder (`[search] model`).

use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use safetensors::{Dtype, SafeTensors};
use sha2::{Digest, Sha256};
use tokenizers::Tokenizer;

use super::lexical::split_identifiers;

/// A static embedding table and the tokenizer whose ids index it.
pub struct StaticModel {
    id: String,
    tokenizer: Tokenizer,
    /// `rows × dim` int8 values, row-major (the bundled table is read in
    /// place).
    table: Cow<'static, [u8]>,
    /// One scale per row: value = table × scale.
    scales: Vec<f32>,
    dim: usize,
}

impl std::fmt::Debug for StaticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticModel").field("id", &self.id).field("dim", &self.dim).finish()
    }
}

/// Name of the bundled table, part of every cache key of its vectors.
pub const BUNDLED_ID: &str = "wordllama-l2-supercat-256-i8";

#[cfg(feature = "bundled-model")]
const BUNDLED: Option<(&[u8], &[u8])> = Some((
    include_bytes!("../../../../models/wordllama/table.safetensors"),
    include_bytes!("../../../../models/wordllama/tokenizer.json"),
));
#[cfg(not(feature = "bundled-model"))]
const BUNDLED: Option<(&[u8], &[u8])> = None;

impl StaticModel {
    /// The table built into this binary, loaded once; `None` when the
    /// binary was built without it.
    pub fn bundled() -> Option<Arc<StaticModel>> {
        static MODEL: OnceLock<Option<Arc<StaticModel>>> = OnceLock::new();
        MODEL
            .get_or_init(|| {
                let (table, tokenizer) = BUNDLED?;
                // Built from checked-in files; a failure here is a build defect.
                let model = StaticModel::from_bytes(BUNDLED_ID.to_owned(), Cow::Borrowed(table), tokenizer);
                Some(Arc::new(model.expect("the bundled model loads")))
            })
            .clone()
    }

    /// Load `table.safetensors` and `tokenizer.json` from `dir`; the model's
    /// id is derived from the table's digest.
    pub fn from_dir(dir: &Path) -> Result<StaticModel, String> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        };
        let table = read("table.safetensors")?;
        let tokenizer = read("tokenizer.json")?;
        let digest = Sha256::digest(&table);
        let id = format!("static-{}", &hex(&digest)[..16]);
        StaticModel::from_bytes(id, Cow::Owned(table), &tokenizer)
    }

    /// A model from the bytes of its table and tokenizer.
    pub fn from_bytes(id: String, table: Cow<'static, [u8]>, tokenizer: &[u8]) -> Result<StaticModel, String> {
        let tokenizer = Tokenizer::from_bytes(tokenizer).map_err(|e| format!("tokenizer.json: {e}"))?;
        let tensors = SafeTensors::deserialize(&table).map_err(|e| format!("table.safetensors: {e}"))?;
        let embeddings = tensors.tensor("embeddings").map_err(|e| format!("table.safetensors: {e}"))?;
        let scales = tensors.tensor("scales").map_err(|e| format!("table.safetensors: {e}"))?;
        let [rows, dim] = embeddings.shape() else {
            return Err("table.safetensors: `embeddings` is not a matrix".into());
        };
        if embeddings.dtype() != Dtype::I8 || scales.dtype() != Dtype::F32 || scales.shape() != [*rows] {
            return Err("table.safetensors: expected `embeddings` I8 [rows, dim] and `scales` F32 [rows]".into());
        }
        if tokenizer.get_vocab_size(true) > *rows {
            return Err(format!("the tokenizer has {} tokens, the table {rows} rows", tokenizer.get_vocab_size(true)));
        }
        let scales = scales.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        // Where the matrix lies in the file, so a borrowed file is not copied.
        let start = embeddings.data().as_ptr() as usize - table.as_ptr() as usize;
        let range = start..start + embeddings.data().len();
        let dim = *dim;
        let table = match table {
            Cow::Borrowed(bytes) => Cow::Borrowed(&bytes[range]),
            Cow::Owned(bytes) => Cow::Owned(bytes[range].to_vec()),
        };
        Ok(StaticModel { id, tokenizer, table, scales, dim })
    }

    /// What this model is called in cache keys and reports.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Length of its vectors.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The token ids of `text` (identifiers split into words first).
    pub fn tokens(&self, text: &str) -> Vec<u32> {
        match self.tokenizer.encode(split_identifiers(text).as_ref(), false) {
            Ok(encoding) => encoding.get_ids().to_vec(),
            Err(error) => {
                tracing::debug!(%error, "cannot tokenize a text; it embeds as nothing");
                Vec::new()
            }
        }
    }

    /// The unit-length mean of `tokens`' rows, each weighted by `weight`;
    /// all zeros when nothing is left.
    pub fn pool(&self, tokens: &[u32], weight: impl Fn(u32) -> f32) -> Vec<f32> {
        let mut sum = vec![0f32; self.dim];
        for &token in tokens {
            let row = token as usize;
            let Some(scale) = self.scales.get(row) else { continue };
            let w = weight(token) * scale;
            for (s, &v) in sum.iter_mut().zip(&self.table[row * self.dim..(row + 1) * self.dim]) {
                *s += w * f32::from(v as i8);
            }
        }
        normalise(&mut sum);
        sum
    }

    /// The embedding of `text`: the unit-length mean of its tokens' rows.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        self.pool(&self.tokens(text), |_| 1.0)
    }
}

/// Scale `v` to unit length (a zero vector stays zero).
pub fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Dot product of two vectors of one length, in eight lanes (which the
/// compiler turns into SIMD).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a_chunks.remainder().iter().zip(b_chunks.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += x * y;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(all(test, feature = "bundled-model"))]
mod tests {
    use super::*;

    #[test]
    fn related_texts_are_nearer_than_unrelated_ones() {
        let model = StaticModel::bundled().unwrap();
        let rain = model.embed("is it going to rain in Lisbon tomorrow");
        let forecast = model.embed("get forecast: weather forecast for a location");
        let email = model.embed("send email: send a message to a recipient");
        assert!(dot(&rain, &forecast) > dot(&rain, &email), "{} vs {}", dot(&rain, &forecast), dot(&rain, &email));
        assert!((dot(&rain, &rain) - 1.0).abs() < 1e-4);
        assert!(model.embed("").iter().all(|&x| x == 0.0));
    }
}
