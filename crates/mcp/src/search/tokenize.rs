//! Words for BM25: split on anything not a letter or digit and at camelCase humps, lowercased,
//! with plurals folded (`tools` → `tool`, `queries` → `query`). Documents and queries go through
//! the same function, so the folding only has to be consistent, not linguistically right.

/// Calls `emit` with each token of `text`.
pub(crate) fn tokens(text: &str, mut emit: impl FnMut(String)) {
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let mut start = 0;
        let mut previous_lower = false;
        for (at, c) in word.char_indices() {
            if c.is_uppercase() && previous_lower {
                emit(normalize(&word[start..at]));
                start = at;
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
        }
        emit(normalize(&word[start..]));
    }
}

fn normalize(token: &str) -> String {
    let mut token = token.to_lowercase();
    let chars = token.chars().count();
    if chars > 4 && token.ends_with("ies") {
        token.truncate(token.len() - 3);
        token.push('y');
    } else if chars > 3 && token.ends_with('s') && !token.ends_with("ss") {
        token.truncate(token.len() - 1);
    }
    token
}
