//! Fitting a tool's JSON answer under the MCP output bound by paging it, never by cutting the text: a client
//! must be able to parse every response, and the model must be told where the rest is.

use serde_json::Value;

/// Characters of text: the bound is in characters, as the client counts them.
fn chars(s: &str) -> usize {
    s.chars().count()
}

/// Serialises `v` in at most `limit` characters. `v[list]` is a page of items that starts at `offset`: when the
/// whole does not fit, items are dropped from the end of the page until it does, and `has_more`, `next_offset`
/// and `cut` say so and where to continue. A first item too large on its own is kept with its longest strings
/// shortened (each marked with a final `…`), so a page always makes progress. The result is always valid JSON.
pub fn fit(v: Value, list: &str, offset: usize, limit: usize) -> String {
    let whole = v.to_string();
    if chars(&whole) <= limit {
        return whole;
    }
    let mut v = v;
    let items = match v.get_mut(list).map(Value::take) {
        Some(Value::Array(items)) => items,
        _ => return shortened(v, limit),
    };
    let total_here = items.len();
    let page = |k: usize, items: &[Value]| -> Value {
        let mut out = v.clone();
        let note = format!(
            "{} of {total_here} {list} left out to stay under the output limit; ask again with offset {}",
            total_here - k,
            offset + k
        );
        if let Value::Object(o) = &mut out {
            o.insert(list.to_string(), Value::Array(items[..k].to_vec()));
            o.insert("has_more".into(), Value::Bool(true));
            o.insert("next_offset".into(), Value::from(offset + k));
            o.insert("cut".into(), Value::String(note));
        }
        out
    };
    let fits = |k: usize| chars(&page(k, &items).to_string()) <= limit;
    // The most items that fit: `fits` is monotone in k.
    let (mut lo, mut hi) = (0usize, total_here);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    if lo > 0 || total_here == 0 {
        return page(lo, &items).to_string();
    }
    // Not even the first item fits: shorten it.
    let mut first = vec![items[0].clone()];
    let room = limit.saturating_sub(chars(&page(0, &items).to_string()));
    shrink_to(&mut first[0], room);
    page(1, &first).to_string()
}

/// `v` with its longest strings shortened until it serialises in `limit` characters.
fn shortened(mut v: Value, limit: usize) -> String {
    shrink_to(&mut v, limit);
    v.to_string()
}

/// Halves the longest string in `v` until `v` serialises in `limit` characters (or no string is worth
/// shortening).
fn shrink_to(v: &mut Value, limit: usize) {
    for _ in 0..64 {
        if chars(&v.to_string()) <= limit {
            return;
        }
        let Some(s) = longest_string(v) else { return };
        let n = chars(s);
        if n <= 16 {
            return;
        }
        let keep: String = s.chars().take(n / 2).collect();
        *s = format!("{keep}…");
    }
}

fn longest_string(v: &mut Value) -> Option<&mut String> {
    let mut best: Option<&mut String> = None;
    fn walk<'a>(v: &'a mut Value, best: &mut Option<&'a mut String>) {
        match v {
            Value::String(s) if best.as_ref().is_none_or(|b| b.len() < s.len()) => *best = Some(s),
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, best)),
            Value::Object(o) => o.values_mut().for_each(|x| walk(x, best)),
            _ => {}
        }
    }
    walk(v, &mut best);
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_listing_too_long_is_paged_and_stays_json() {
        let items: Vec<Value> = (0..500)
            .map(|i| json!({"id": i, "text": "x".repeat(100)}))
            .collect();
        let s = fit(
            json!({"total": 500, "offset": 20, "items": items}),
            "items",
            20,
            5_000,
        );
        assert!(chars(&s) <= 5_000);
        let v: Value = serde_json::from_str(&s).unwrap();
        let kept = v["items"].as_array().unwrap().len();
        assert!(kept > 10 && kept < 500);
        assert_eq!(v["has_more"], true);
        assert_eq!(v["next_offset"], 20 + kept);
        assert_eq!(v["items"][0]["id"], 0);
    }

    #[test]
    fn one_huge_item_is_shortened_not_dropped() {
        let s = fit(
            json!({"messages": [{"text": "é".repeat(50_000)}, {"text": "b"}]}),
            "messages",
            0,
            2_000,
        );
        assert!(chars(&s) <= 2_000, "{}", chars(&s));
        let v: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["messages"].as_array().unwrap().len(), 1);
        assert!(v["messages"][0]["text"].as_str().unwrap().ends_with('…'));
        assert_eq!(v["next_offset"], 1);
    }

    #[test]
    fn what_fits_is_unchanged() {
        let v = json!({"items": [1, 2, 3]});
        assert_eq!(fit(v.clone(), "items", 0, 1_000), v.to_string());
    }
}
