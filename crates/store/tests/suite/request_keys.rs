//! Idempotency keys of creates: one claim per organization, operation and
//! key; the answer kept once finished; freed when the request failed;
//! forgotten after a day; an abandoned claim taken over.

use super::backend::Backend;
use super::contract;
use super::records::org;
use store::{REQUEST_KEY_TTL_SECS, RequestKey};

contract!(
    a_request_key_is_claimed_once_and_answers_what_the_first_request_answered,
    a_request_key_is_forgotten_after_a_day_and_an_abandoned_claim_is_taken_over
);

async fn a_request_key_is_claimed_once_and_answers_what_the_first_request_answered(b: &Backend) {
    let (o1, o2) = (org(b.store.as_ref(), "a").await, org(b.store.as_ref(), "b").await);
    let store = b.store.as_ref();
    let at = 1_000_000;
    assert_eq!(store.claim_request_key(&o1, "agents", "k", "f1", at).await.unwrap(), RequestKey::Claimed);
    assert_eq!(
        store.claim_request_key(&o1, "agents", "k", "f2", at + 1).await.unwrap(),
        RequestKey::Running { fingerprint: "f1".into() },
        "the first request still runs"
    );
    assert_eq!(
        store.claim_request_key(&o2, "agents", "k", "f1", at).await.unwrap(),
        RequestKey::Claimed,
        "another org's"
    );
    assert_eq!(
        store.claim_request_key(&o1, "vaults", "k", "f1", at).await.unwrap(),
        RequestKey::Claimed,
        "another operation's"
    );

    store.finish_request_key(&o1, "agents", "k", 200, r#"{"id":"agent_1"}"#).await.unwrap();
    let done = RequestKey::Done { fingerprint: "f1".into(), status: 200, body: r#"{"id":"agent_1"}"#.into() };
    assert_eq!(store.claim_request_key(&o1, "agents", "k", "f1", at + 2).await.unwrap(), done);
    store.release_request_key(&o1, "agents", "k").await.unwrap();
    assert_eq!(store.claim_request_key(&o1, "agents", "k", "f1", at + 3).await.unwrap(), done, "a finished key stays");

    store.release_request_key(&o1, "vaults", "k").await.unwrap();
    assert_eq!(
        store.claim_request_key(&o1, "vaults", "k", "f3", at + 4).await.unwrap(),
        RequestKey::Claimed,
        "released"
    );
}

async fn a_request_key_is_forgotten_after_a_day_and_an_abandoned_claim_is_taken_over(b: &Backend) {
    let o1 = org(b.store.as_ref(), "a").await;
    let store = b.store.as_ref();
    let at = 5_000_000;
    assert_eq!(store.claim_request_key(&o1, "agents", "done", "f", at).await.unwrap(), RequestKey::Claimed);
    store.finish_request_key(&o1, "agents", "done", 200, "{}").await.unwrap();
    assert_eq!(store.claim_request_key(&o1, "agents", "stuck", "f", at).await.unwrap(), RequestKey::Claimed);

    let later = at + 20 * 60;
    assert_eq!(
        store.claim_request_key(&o1, "agents", "stuck", "g", later).await.unwrap(),
        RequestKey::Claimed,
        "a claim whose request never finished is taken over"
    );
    assert!(matches!(
        store.claim_request_key(&o1, "agents", "done", "g", later).await.unwrap(),
        RequestKey::Done { .. }
    ));
    let next_day = at + REQUEST_KEY_TTL_SECS + 1;
    assert_eq!(store.claim_request_key(&o1, "agents", "done", "g", next_day).await.unwrap(), RequestKey::Claimed);
}
