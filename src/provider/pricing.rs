//! What a session costs, where the price is known. A small built-in table of list prices (USD
//! per million tokens) for the common models; `[models."NAME"]` in config overrides or adds
//! them. An unknown model has no cost — never a guessed one.

use crate::provider::Usage;

/// Prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Input read from the prompt cache (default: the input price).
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// Input written to the prompt cache (default: the input price).
    #[serde(default)]
    pub cache_write: Option<f64>,
}

/// List prices of common models (prefix match, most specific first).
pub fn builtin(model: &str) -> Option<Price> {
    const fn p(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Price {
        Price {
            input,
            output,
            cache_read: Some(cache_read),
            cache_write: Some(cache_write),
        }
    }
    let table: &[(&str, Price)] = &[
        ("gpt-5-nano", p(0.05, 0.40, 0.005, 0.05)),
        ("gpt-5-mini", p(0.25, 2.00, 0.025, 0.25)),
        ("gpt-5", p(1.25, 10.00, 0.125, 1.25)),
        ("gpt-4.1-mini", p(0.40, 1.60, 0.10, 0.40)),
        ("gpt-4.1", p(2.00, 8.00, 0.50, 2.00)),
        ("gpt-4o-mini", p(0.15, 0.60, 0.075, 0.15)),
        ("gpt-4o", p(2.50, 10.00, 1.25, 2.50)),
        ("o4-mini", p(1.10, 4.40, 0.275, 1.10)),
        ("o3", p(2.00, 8.00, 0.50, 2.00)),
        ("claude-opus-4", p(15.00, 75.00, 1.50, 18.75)),
        ("claude-sonnet-4", p(3.00, 15.00, 0.30, 3.75)),
        ("claude-haiku-4", p(1.00, 5.00, 0.10, 1.25)),
    ];
    let model = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    table
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map(|(_, price)| *price)
}

/// The cost of `usage` at `price`, in USD.
pub fn cost(usage: &Usage, price: &Price) -> f64 {
    let cached = usage.cache_read_tokens + usage.cache_write_tokens;
    let fresh = usage.input_tokens.saturating_sub(cached);
    let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
    per(fresh, price.input)
        + per(usage.cache_read_tokens, price.cache_read.unwrap_or(price.input))
        + per(usage.cache_write_tokens, price.cache_write.unwrap_or(price.input))
        + per(usage.output_tokens, price.output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_tokens_cost_less_and_unknown_models_cost_nothing_known() {
        let price = builtin("claude-sonnet-4-5").unwrap();
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 800_000,
            cache_write_tokens: 0,
        };
        // 200k fresh × 3 + 800k cached × 0.3 + 100k out × 15, per million.
        assert!((cost(&usage, &price) - (0.6 + 0.24 + 1.5)).abs() < 1e-9);
        assert!(builtin("my-local-model").is_none());
        assert_eq!(builtin("openai/gpt-5.1").unwrap().input, 1.25);
    }
}
