//! The per-catalog search index, built once when a catalog is fetched: BM25 postings over tool
//! names, parameter names and descriptions (with per-field weights), and the strings a regex
//! pattern is matched against.

use super::haystack::Haystack;
use super::tokenize::tokens;
use crate::catalog::ToolInfo;
use std::collections::HashMap;

/// Term-frequency weight of a word in the tool name, a parameter name, the description.
const NAME_WEIGHT: f32 = 3.0;
const PARAM_WEIGHT: f32 = 2.0;
const DESCRIPTION_WEIGHT: f32 = 1.0;

/// One document's weighted frequency of one term.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Posting {
    pub(crate) doc: u32,
    pub(crate) tf: f32,
}

#[derive(Debug, Default)]
pub(crate) struct CatalogIndex {
    terms: HashMap<String, u32>,
    pub(crate) postings: Vec<Vec<Posting>>,
    pub(crate) doc_len: Vec<f32>,
    pub(crate) total_len: f64,
    /// Per tool: its name, and its description plus parameter names (regex haystacks).
    pub(crate) names: Haystack,
    pub(crate) details: Haystack,
    tools: usize,
}

/// Names of the properties in a JSON Schema, nested objects and array items included.
fn parameter_names(schema: &serde_json::Map<String, serde_json::Value>, out: &mut Vec<String>, depth: usize) {
    if depth > 8 {
        return;
    }
    if let Some(serde_json::Value::Object(properties)) = schema.get("properties") {
        for (name, sub) in properties {
            out.push(name.clone());
            if let serde_json::Value::Object(sub) = sub {
                parameter_names(sub, out, depth + 1);
            }
        }
    }
    if let Some(serde_json::Value::Object(items)) = schema.get("items") {
        parameter_names(items, out, depth + 1);
    }
}

impl CatalogIndex {
    pub(crate) fn build(tools: &[ToolInfo]) -> Self {
        let mut index = CatalogIndex::default();
        let mut frequencies: HashMap<u32, f32> = HashMap::new();
        for (doc, tool) in tools.iter().enumerate() {
            let mut params = Vec::new();
            parameter_names(&tool.input_schema, &mut params, 0);
            frequencies.clear();
            let mut length = 0.0f32;
            let mut add = |text: &str, weight: f32, index: &mut CatalogIndex| {
                tokens(text, |token| {
                    let next = index.terms.len() as u32;
                    let term = *index.terms.entry(token).or_insert(next);
                    if term == next {
                        index.postings.push(Vec::new());
                    }
                    *frequencies.entry(term).or_insert(0.0) += weight;
                    length += weight;
                });
            };
            add(&tool.name, NAME_WEIGHT, &mut index);
            if let Some(title) = &tool.title {
                add(title, NAME_WEIGHT, &mut index);
            }
            for param in &params {
                add(param, PARAM_WEIGHT, &mut index);
            }
            add(&tool.description, DESCRIPTION_WEIGHT, &mut index);
            for (&term, &tf) in &frequencies {
                index.postings[term as usize].push(Posting { doc: doc as u32, tf });
            }
            index.doc_len.push(length);
            index.total_len += f64::from(length);
            index.names.push(&tool.name);
            index.details.push(&format!("{}\n{}", tool.description, params.join(" ")));
            index.tools += 1;
        }
        for postings in &mut index.postings {
            postings.sort_unstable_by_key(|posting| posting.doc);
        }
        index
    }

    pub(crate) fn len(&self) -> usize {
        self.tools
    }

    pub(crate) fn term(&self, token: &str) -> Option<&[Posting]> {
        self.terms.get(token).map(|&term| self.postings[term as usize].as_slice())
    }
}
