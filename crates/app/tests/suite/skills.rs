//! Skills through the service: real zips, read with bounds (escaping paths,
//! symlinks and zip bombs refused by name), versions, and the resolution of
//! an environment's skills at creation (a later version changes nothing).

use super::support::start;
use app::Error;
use app::skills::Upload;
use app::skills::archive::{Bundle, BundleError, MAX_UNPACKED_BYTES};
use protocol::environment::{EnvironmentConfig, EnvironmentCreate, HostedEnvironmentParam, HostedKind};
use protocol::skill::{HostedSkill, SkillParam, VersionParam};
use std::io::{Cursor, Write};
use test_support::model_server::ModelServer;
use zip::write::SimpleFileOptions;

const SKILL_MD: &str = "---\nname: greeter\ndescription: Greets.\n---\n# Greeter\n";

/// A zip of `(path, unix mode, bytes)` entries.
fn zip(entries: &[(&str, u32, &[u8])]) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (path, mode, data) in entries {
        let options = SimpleFileOptions::default().unix_permissions(*mode);
        z.start_file(*path, options).unwrap();
        z.write_all(data).unwrap();
    }
    z.finish().unwrap().into_inner()
}

fn upload(data: Vec<u8>) -> Vec<Upload> {
    vec![Upload { filename: "skill.zip".into(), data }]
}

#[test]
fn a_zip_with_one_top_directory_is_read_from_inside_it() {
    let bundle = Bundle::from_zip(&zip(&[
        ("greeter/SKILL.md", 0o644, SKILL_MD.as_bytes()),
        ("greeter/scripts/run.sh", 0o755, b"echo hi"),
        ("__MACOSX/greeter/._SKILL.md", 0o644, b"junk"),
    ]))
    .unwrap();
    let paths: Vec<(&str, bool)> = bundle.files.iter().map(|f| (f.path.as_str(), f.executable)).collect();
    assert_eq!(paths, [("SKILL.md", false), ("scripts/run.sh", true)]);
    let again = Bundle::from_zip(&bundle.to_zip().unwrap()).unwrap();
    assert_eq!(again, bundle, "the canonical zip reads back the same");
}

#[test]
fn escaping_paths_symlinks_and_zip_bombs_are_refused_by_name() {
    let md = SKILL_MD.as_bytes();
    let escape = zip(&[("SKILL.md", 0o644, md), ("a/../../x", 0o644, b"x")]);
    assert!(matches!(Bundle::from_zip(&escape), Err(BundleError::Escapes(p)) if p == "a/../../x"));
    let absolute = zip(&[("SKILL.md", 0o644, md), ("/etc/x", 0o644, b"x")]);
    assert!(matches!(Bundle::from_zip(&absolute), Err(BundleError::Escapes(_))));
    let link = {
        let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
        z.start_file("SKILL.md", SimpleFileOptions::default()).unwrap();
        z.write_all(md).unwrap();
        z.add_symlink("link", "/etc/passwd", SimpleFileOptions::default()).unwrap();
        z.finish().unwrap().into_inner()
    };
    assert!(matches!(Bundle::from_zip(&link), Err(BundleError::Symlink(p)) if p == "link"));
    let zeros = vec![0u8; MAX_UNPACKED_BYTES as usize + 1];
    let bomb = {
        let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
        z.start_file("SKILL.md", SimpleFileOptions::default()).unwrap();
        z.write_all(md).unwrap();
        let big = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated).large_file(true);
        z.start_file("zeros", big).unwrap();
        z.write_all(&zeros).unwrap();
        z.finish().unwrap().into_inner()
    };
    assert!(bomb.len() < 1 << 20, "a small zip");
    assert!(matches!(Bundle::from_zip(&bomb), Err(BundleError::TooBig)));
    assert!(matches!(Bundle::from_zip(&zip(&[("README", 0o644, b"x")])), Err(BundleError::NoSkillMd)));
    assert!(matches!(Bundle::from_zip(b"PK\x03\x04nope"), Err(BundleError::NotZip(_))));
    let files = vec![("SKILL.md".to_string(), md.to_vec()), ("x/../../y".to_string(), b"y".to_vec())];
    assert!(matches!(Bundle::from_files(files), Err(BundleError::Escapes(_))));
}

#[tokio::test]
async fn versions_are_numbered_and_environments_keep_the_one_they_were_created_with() {
    let model = ModelServer::start().await.unwrap();
    let t = start(&model.base_url()).await;
    let skills = t.app.skills(&t.org);
    let skill = skills.create(upload(zip(&[("SKILL.md", 0o644, SKILL_MD.as_bytes())]))).await.unwrap();
    assert_eq!((skill.name.as_str(), skill.default_version, skill.latest_version), ("greeter", 1, 1));
    let reference = SkillParam::SkillReference { skill_id: skill.id.clone(), version: None };
    let config = EnvironmentConfig { skills: Some(vec![reference.clone()]), ..Default::default() };
    let create = |config: EnvironmentConfig| EnvironmentCreate {
        environment: HostedEnvironmentParam { kind: HostedKind::OpenaiHosted, config },
        vault_ids: None,
        metadata: None,
    };
    let before = t.app.environments(&t.org).create(create(config.clone())).await.unwrap();
    assert!(before.config.skills.is_none(), "the zips are stored apart, not in the document");
    let v2_md = SKILL_MD.replace("Greets.", "Greets again.");
    let v2 =
        skills.create_version(&skill.id, upload(zip(&[("SKILL.md", 0o644, v2_md.as_bytes())])), true).await.unwrap();
    assert_eq!(v2.version, 2);
    let after = t.app.environments(&t.org).create(create(config)).await.unwrap();
    let version = |s: &HostedSkill| match s {
        HostedSkill::SkillReference { version, .. } => version.clone(),
        HostedSkill::Inline { .. } => String::new(),
    };
    assert_eq!((version(&before.skills[0]), version(&after.skills[0])), ("1".to_string(), "2".to_string()));
    let stored = t.app.store.environment_content(&t.org, &before.id, "skill:greeter").await.unwrap().unwrap();
    let bundle = Bundle::from_zip(&stored).unwrap();
    assert_eq!(bundle.skill_md(), SKILL_MD.as_bytes(), "the environment kept version 1's files");

    let unknown = SkillParam::SkillReference { skill_id: skill.id.clone(), version: Some(VersionParam::Number(7)) };
    let config = EnvironmentConfig { skills: Some(vec![unknown]), ..Default::default() };
    match t.app.environments(&t.org).create(create(config)).await {
        Err(Error::MissingReference { param, .. }) => assert_eq!(param, "environment.skills[0].version"),
        other => panic!("{other:?}"),
    }
    let twice = EnvironmentConfig { skills: Some(vec![reference.clone(), reference]), ..Default::default() };
    match t.app.environments(&t.org).create(create(twice)).await {
        Err(Error::Invalid { param, .. }) => assert_eq!(param.as_deref(), Some("environment.skills[1]")),
        other => panic!("{other:?}"),
    }
    let listed = t.app.environments(&t.org).list(&Default::default()).await.unwrap();
    assert_eq!(listed.items.len(), 2, "the refused environments stored nothing");
}
