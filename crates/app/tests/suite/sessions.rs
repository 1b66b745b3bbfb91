//! Sessions through the service: one create for every API, announced;
//! reads see the writes before them; other organizations see nothing.

use super::support::start;
use app::Error;
use app::sessions::{AgentSource, NewSession};
use protocol::event::EventBody;
use protocol::item::{Content, Role};
use protocol::list::PageRequest;
use protocol::session::{EnvironmentParam, SessionAgentParam};
use test_support::model_server::{ModelServer, Step};

fn inline(model: &str) -> NewSession {
    let mut new = NewSession::conversation(Default::default(), Vec::new());
    new.agent = AgentSource::Inline(SessionAgentParam { model: Some(model.into()), ..Default::default() });
    new.environment = EnvironmentParam::None;
    new
}

fn text(s: &str) -> Vec<Content> {
    vec![Content::InputText { text: s.into() }]
}

#[tokio::test]
async fn a_created_session_is_announced_first_on_its_event_stream() {
    let model = ModelServer::start().await.unwrap();
    let t = start(&model.base_url()).await;
    let mut new = inline("gpt-test");
    new.subscribe = true;
    let created = t.app.sessions(&t.org).create(new).await.unwrap();
    let (mut rx, _) = created.events.unwrap();
    let first = rx.recv().await.unwrap();
    match &first.body {
        EventBody::SessionCreated { session } => assert_eq!(session.id, created.session.id.to_string()),
        other => panic!("first event {other:?}"),
    }
}

#[tokio::test]
async fn a_conversation_with_items_is_announced_and_holds_them_without_a_turn_running() {
    let model = ModelServer::start().await.unwrap();
    let t = start(&model.base_url()).await;
    let items = vec![(Role::User, text("first")), (Role::Assistant, vec![Content::OutputText { text: "ok".into() }])];
    let created = t.app.sessions(&t.org).create(NewSession::conversation(Default::default(), items)).await.unwrap();
    let id = created.session.id;
    // Read-your-writes: no flush by the caller.
    let page = t.app.turns(&t.org).items(id, None, &PageRequest::default()).await.unwrap();
    assert_eq!(page.items.len(), 2);
    let events = t.app.store.events_after(id, 0, 10).await.unwrap();
    assert!(matches!(events[0].body, EventBody::SessionCreated { .. }), "{:?}", events[0].body);
    assert_eq!(model.requests().len(), 0, "no model was called");
}

#[tokio::test]
async fn the_first_input_is_a_queued_turn_the_next_read_sees() {
    let model = ModelServer::with_script([Step::text("hello")]).await.unwrap();
    let t = start(&model.base_url()).await;
    let mut new = inline("gpt-test");
    new.input = Some(vec![text("hi")]);
    let created = t.app.sessions(&t.org).create(new).await.unwrap();
    let turn = created.turn.unwrap();
    let listed = t.app.turns(&t.org).list(created.session.id, &PageRequest::default()).await.unwrap();
    assert_eq!(listed.items.iter().map(|t| t.id).collect::<Vec<_>>(), vec![turn.id]);
    let got = t.app.turns(&t.org).get(created.session.id, turn.id).await.unwrap();
    assert_eq!(got.id, turn.id);
}

#[tokio::test]
async fn another_organizations_session_is_not_found_and_nothing_is_written_for_a_bad_one() {
    let model = ModelServer::start().await.unwrap();
    let t = start(&model.base_url()).await;
    let created = t.app.sessions(&t.org).create(inline("gpt-test")).await.unwrap();
    let other = app::keys::create_organization(t.app.store.as_ref(), "other").await.unwrap().id;
    let err = t.app.sessions(&other).get(created.session.id).await.unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    let err = t.app.sessions(&other).delete(created.session.id).await.unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    // An unknown saved agent: 404, and no session appears.
    let mut bad = inline("gpt-test");
    bad.agent = AgentSource::Saved { agent_id: protocol::ids::Kind::Agent.mint(), overrides: None };
    let err = t.app.sessions(&t.org).create(bad).await.unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    let all = t.app.sessions(&t.org).list(&Default::default(), &PageRequest::default()).await.unwrap();
    assert_eq!(all.items.len(), 1);
}
