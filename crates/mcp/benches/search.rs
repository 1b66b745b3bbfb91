//! `search_tools` over a 10,000-tool catalog: p50/p99 of a BM25 query and of a regex pattern
//! (issue 5: p99 ≤ 1 ms with a query, ≤ 5 ms with a pattern).
//!
//! Run: `cargo bench -p mcp --bench search`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcp::{Catalog, SearchArgs, SearchLimits, ToolInfo, search};
use serde_json::json;
use std::time::{Duration, Instant};

const TOOLS: usize = 10_000;
const ROUNDS: usize = 300;

const VERBS: &[&str] = &["get", "list", "create", "update", "delete", "search", "sync", "export", "import", "archive"];
const NOUNS: &[&str] = &[
    "order",
    "invoice",
    "customer",
    "inventory",
    "shipment",
    "ticket",
    "user",
    "project",
    "report",
    "payment",
    "warehouse",
    "product",
    "calendar",
    "event",
    "document",
    "folder",
    "message",
    "channel",
    "repository",
    "issue",
];
const WORDS: &[&str] = &[
    "the",
    "a",
    "for",
    "with",
    "from",
    "account",
    "records",
    "status",
    "recent",
    "all",
    "matching",
    "filter",
    "returns",
    "details",
    "stock",
    "level",
    "sku",
    "email",
    "team",
    "billing",
    "monthly",
    "region",
    "quota",
    "permission",
    "owner",
    "archive",
    "history",
    "latest",
    "summary",
    "total",
    "amount",
    "currency",
    "note",
];

/// A deterministic pseudo-random generator, so every run searches the same catalog.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % below
    }
}

fn catalog() -> Catalog {
    let mut rng = Lcg(42);
    let tools = (0..TOOLS)
        .map(|i| {
            let verb = VERBS[rng.next(VERBS.len())];
            let noun = NOUNS[rng.next(NOUNS.len())];
            let name = format!("{verb}_{noun}_{i}");
            let description: Vec<&str> = (0..12 + rng.next(12)).map(|_| WORDS[rng.next(WORDS.len())]).collect();
            let description = format!("{verb} {noun} {}", description.join(" "));
            let mut properties = serde_json::Map::new();
            for _ in 0..1 + rng.next(4) {
                properties.insert(
                    format!("{}_{}", NOUNS[rng.next(NOUNS.len())], WORDS[rng.next(WORDS.len())]),
                    json!({"type": "string"}),
                );
            }
            let schema = json!({"type": "object", "properties": properties});
            ToolInfo::new(name, description, schema.as_object().unwrap().clone())
        })
        .collect();
    Catalog::new("bench", tools)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at]
}

fn measure(catalog: &Catalog, cases: &[(&str, SearchArgs)]) -> (Duration, Duration, Duration) {
    let checked: Vec<_> = cases.iter().map(|(_, args)| args.check().unwrap()).collect();
    let mut all = Vec::with_capacity(ROUNDS * checked.len());
    let mut per_case = vec![Vec::with_capacity(ROUNDS); checked.len()];
    for _ in 0..ROUNDS {
        for (at, args) in checked.iter().enumerate() {
            let started = Instant::now();
            let hits = search(&[catalog], args, SearchLimits::default()).unwrap();
            let took = started.elapsed();
            std::hint::black_box(hits);
            all.push(took);
            per_case[at].push(took);
        }
    }
    for ((name, _), samples) in cases.iter().zip(&mut per_case) {
        samples.sort();
        println!("    {name:<36} p50 {:>10.1?}  p99 {:>10.1?}", percentile(samples, 0.5), percentile(samples, 0.99));
    }
    all.sort();
    (percentile(&all, 0.5), percentile(&all, 0.99), *all.last().unwrap())
}

fn main() {
    let started = Instant::now();
    let catalog = catalog();
    catalog.prepare_index();
    let built = started.elapsed();
    let queries: Vec<(&str, SearchArgs)> = [
        "warehouse stock level",
        "create invoice for customer",
        "list recent orders",
        "export monthly billing report",
        "delete repository issue",
        "sku",
        "calendar event owner permission",
        "sync user quota region",
    ]
    .into_iter()
    .map(|q| (q, SearchArgs::query(q).with_limit(20)))
    .collect();
    let patterns: Vec<(&str, SearchArgs)> = [
        "^get_order",
        "inventory|stock",
        "customer.*email",
        "(create|update)_user_\\d+",
        "billing",
        "zz_no_such_tool",
        "^delete_.*_99\\d\\d$",
    ]
    .into_iter()
    .map(|p| (p, SearchArgs::pattern(p).with_limit(20)))
    .collect();
    println!("catalog: {TOOLS} tools, index built in {built:?}");
    println!("  queries (limit 20):");
    let (q50, q99, qmax) = measure(&catalog, &queries);
    println!("  patterns (limit 20):");
    let (p50, p99, pmax) = measure(&catalog, &patterns);
    println!(
        "query   ({} queries x {ROUNDS}): p50 {q50:?}  p99 {q99:?}  max {qmax:?}  (target p99 <= 1ms)",
        queries.len()
    );
    println!(
        "pattern ({} patterns x {ROUNDS}): p50 {p50:?}  p99 {p99:?}  max {pmax:?}  (target p99 <= 5ms)",
        patterns.len()
    );
}
