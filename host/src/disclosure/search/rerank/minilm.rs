//! all-MiniLM-L6-v2 run by candle: BERT (6 layers, 384 dimensions) over
//! WordPiece tokens, mean-pooled and normalised, as sentence-transformers
//! runs it.
//!
//! One text per forward pass, never a padded batch: a text's vector then
//! depends on the text alone, so rankings are the same on every replica
//! whatever else was embedded with it.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationParams};

use super::FILES;

/// Tokens read of a text, as sentence-transformers reads this model.
const MAX_TOKENS: usize = 128;

/// The transformer and its tokenizer.
pub struct MiniLm {
    id: String,
    model: BertModel,
    tokenizer: Tokenizer,
}

impl MiniLm {
    /// Load the model in `dir` ([`FILES`]); its id names the weights'
    /// digest, so vectors kept on disk never outlive their weights.
    pub fn load(dir: &Path) -> Result<MiniLm, String> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        };
        let weights = read(FILES[0])?;
        let config: Config = serde_json::from_slice(&read(FILES[2])?)
            .map_err(|e| format!("{}: not a BERT configuration: {e}", dir.join(FILES[2]).display()))?;
        let mut tokenizer = Tokenizer::from_bytes(read(FILES[1])?)
            .map_err(|e| format!("{}: not a tokenizer: {e}", dir.join(FILES[1]).display()))?;
        let truncation = TruncationParams { max_length: MAX_TOKENS, ..TruncationParams::default() };
        tokenizer.with_truncation(Some(truncation)).map_err(|e| format!("cannot set the truncation: {e}"))?;
        tokenizer.with_padding(None);
        let id = format!("minilm-{}", &hex::encode(Sha256::digest(&weights))[..16]);
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| format!("{}: {e}", dir.join(FILES[0]).display()))?;
        let model = BertModel::load(vb, &config).map_err(|e| format!("{}: not a BERT model: {e}", dir.display()))?;
        Ok(MiniLm { id, model, tokenizer })
    }

    /// Names the weights (part of the vectors' cache file name).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The unit vector of `text`.
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, String> {
        let encoding = self.tokenizer.encode(text, true).map_err(|e| format!("cannot tokenize: {e}"))?;
        let ids = encoding.get_ids();
        let run = || -> candle_core::Result<Vec<f32>> {
            let input = Tensor::new(ids, &Device::Cpu)?.unsqueeze(0)?;
            let types = input.zeros_like()?;
            let hidden = self.model.forward(&input, &types, None)?;
            // Mean over the tokens (none is padding), then unit length.
            let pooled = hidden.mean(1)?.squeeze(0)?;
            let norm = pooled.sqr()?.sum_all()?.sqrt()?.to_scalar::<f32>()?;
            Ok(pooled.to_vec1::<f32>()?.into_iter().map(|x| x / norm.max(f32::MIN_POSITIVE)).collect())
        };
        run().map_err(|e| format!("the model failed: {e}"))
    }
}
