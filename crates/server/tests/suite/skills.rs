//! Skills and uploaded files over HTTP: multipart uploads (a zip, or the
//! files of a directory), their limits (413) and malformed bodies (400), and
//! an environment whose skill is unpacked read-only before its setup runs,
//! listed in the turn's instructions, and whose `file_id` file is at its path.

use crate::support::{TestServer, assert_error};
use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use std::io::{Cursor, Write};
use test_support::model_server::{ModelServer, Step};

const SKILL_MD: &str = "---\nname: greeter\ndescription: Greets people.\n---\n# Greeter\nRun scripts/hi.sh.\n";

fn skill_zip() -> Vec<u8> {
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    z.start_file("greeter/SKILL.md", options.unix_permissions(0o644)).unwrap();
    z.write_all(SKILL_MD.as_bytes()).unwrap();
    z.start_file("greeter/scripts/hi.sh", options.unix_permissions(0o755)).unwrap();
    z.write_all(b"#!/bin/sh\necho hi from the skill\n").unwrap();
    z.finish().unwrap().into_inner()
}

async fn upload(s: &TestServer, path: &str, form: Form) -> (StatusCode, Value) {
    let resp = s.http.post(s.url(path)).bearer_auth(&s.key).multipart(form).send().await.unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn zip_form(data: Vec<u8>) -> Form {
    Form::new().part("files", Part::bytes(data).file_name("greeter.zip"))
}

#[tokio::test]
async fn uploads_are_multipart_within_their_limits() {
    let s = TestServer::start().await;
    let (status, skill) = upload(&s, "/v1/skills", zip_form(skill_zip())).await;
    assert_eq!(status, StatusCode::OK, "{skill}");
    assert_eq!((skill["name"].as_str(), skill["default_version"].as_str()), (Some("greeter"), Some("1")));
    let dir = Form::new()
        .part("files[]", Part::bytes(SKILL_MD.as_bytes().to_vec()).file_name("greeter/SKILL.md"))
        .part("files[]", Part::bytes(b"echo".to_vec()).file_name("greeter/scripts/hi.sh"));
    let id = skill["id"].as_str().unwrap();
    let (status, v2) = upload(&s, &format!("/v1/skills/{id}/versions"), dir.text("default", "true")).await;
    assert_eq!((status, v2["version"].as_str()), (StatusCode::OK, Some("2")), "{v2}");

    assert_error(
        &s.post("/v1/skills", json!({"files": []})).await,
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        None,
    );
    let unknown = zip_form(skill_zip()).text("colour", "blue");
    assert_error(
        &upload(&s, "/v1/skills", unknown).await,
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        Some("colour"),
    );
    let none = Form::new().text("purpose", "user_data");
    assert_error(&upload(&s, "/v1/files", none).await, StatusCode::BAD_REQUEST, "invalid_request_error", Some("file"));
    let too_big = Form::new()
        .text("purpose", "user_data")
        .part("file", Part::bytes(vec![0u8; (33 << 20) + 1]).file_name("big.bin"));
    let got = upload(&s, "/v1/files", too_big).await;
    assert_error(&got, StatusCode::PAYLOAD_TOO_LARGE, "invalid_request_error", None);
    let (_, files) = s.get("/v1/files").await;
    assert_eq!(files["data"], json!([]), "nothing stored");
}

#[tokio::test]
async fn an_environment_gets_its_skill_before_setup_and_its_file_at_its_path() {
    let model = ModelServer::with_script(vec![
        Step::tool_call(
            "shell",
            json!({"command": "cat /workspace/setup-saw; /workspace/.agents/skills/greeter/scripts/hi.sh; \
                               cat /workspace/in.txt; echo x > /workspace/.agents/skills/greeter/SKILL.md || echo ro"}),
        ),
        Step::text("done"),
    ])
    .await
    .unwrap();
    let s = TestServer::with_model(&model).await;
    let (_, skill) = upload(&s, "/v1/skills", zip_form(skill_zip())).await;
    let file =
        Form::new().text("purpose", "user_data").part("file", Part::bytes(b"input\n".to_vec()).file_name("in.txt"));
    let (status, file) = upload(&s, "/v1/files", file).await;
    assert_eq!(status, StatusCode::OK, "{file}");
    let session = s
        .session(json!({"agent": {"model": "m"}, "environment": {"type": "openai_hosted",
            "skills": [{"type": "skill_reference", "skill_id": skill["id"]}],
            "files": [{"type": "file_id", "file_id": file["id"], "path": "in.txt"}],
            "setup_commands": [{"command": "head -2 /workspace/.agents/skills/greeter/SKILL.md | tail -1 > setup-saw"}]}}))
        .await;
    assert_eq!(session["environment"]["skills"][0]["version"], "1", "{session}");
    let sid = session["id"].as_str().unwrap();
    let turn = s.send(sid, "greet").await;
    assert_eq!(s.wait_turn(sid, &turn).await["status"], "completed");
    let (_, items) = s.get(&format!("/v1/agents/sessions/{sid}/turns/{turn}/items")).await;
    let cmd = items["data"].as_array().unwrap().iter().find(|i| i["type"] == "command_execution").unwrap();
    assert!(cmd["output"].as_str().unwrap().contains("name: greeter\nhi from the skill\ninput\n"), "{cmd}");
    assert!(cmd["output"].as_str().unwrap().contains("Read-only file system"), "{cmd}");
    let system = model.requests()[0].body["messages"][0].clone();
    let catalog = "- greeter: Greets people. /workspace/.agents/skills/greeter/SKILL.md";
    assert!(system["content"].as_str().unwrap().contains(catalog), "{system}");
}
