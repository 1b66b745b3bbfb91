//! Skills and their versions (each version's zip inline: SQLite `BLOB`,
//! PostgreSQL `bytea`). Every change of a skill's document names the `rev`
//! it read, and a version is inserted in the same transaction as the skill
//! write that mints its number, so two concurrent uploads cannot take one
//! number and a default cannot point at a version deleted meanwhile.

use super::{Backend, Doc, Sql, SqlStore};
use crate::{Page, Result};
use protocol::list::PageRequest;
use protocol::skill::{SkillRecord, SkillVersionRecord};

/// The statement that replaces a skill's document if it is still at `rev - 1`.
fn bump(org_id: &str, skill: &SkillRecord) -> Result<Sql> {
    Ok(Sql::new("UPDATE skills SET doc = $1, rev = $2 WHERE id = $3 AND org_id = $4 AND rev = $5")
        .bind(Doc(serde_json::to_string(skill)?))
        .bind(skill.rev)
        .bind(skill.id.as_str())
        .bind(org_id)
        .bind(skill.rev - 1))
}

fn insert_version(org_id: &str, version: &SkillVersionRecord, content: &[u8]) -> Result<Sql> {
    Ok(Sql::new(
        "INSERT INTO skill_versions (id, org_id, skill_id, version, doc, content) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(version.id.as_str())
    .bind(org_id)
    .bind(version.skill_id.as_str())
    .bind(version.version)
    .bind(Doc(serde_json::to_string(version)?))
    .bind(content))
}

impl<B: Backend> SqlStore<B> {
    pub(crate) async fn create_skill_impl(
        &self,
        org_id: &str,
        skill: &SkillRecord,
        version: &SkillVersionRecord,
        content: &[u8],
    ) -> Result<()> {
        let first = Sql::new("INSERT INTO skills (id, org_id, rev, doc) VALUES ($1, $2, $3, $4)")
            .bind(skill.id.as_str())
            .bind(org_id)
            .bind(skill.rev)
            .bind(Doc(serde_json::to_string(skill)?));
        self.db.transaction(&first, &[insert_version(org_id, version, content)?]).await.map(drop)
    }

    pub(crate) async fn get_skill_impl(&self, org_id: &str, id: &str) -> Result<Option<SkillRecord>> {
        self.doc(Sql::new("SELECT doc FROM skills WHERE id = $1 AND org_id = $2").bind(id).bind(org_id)).await
    }

    pub(crate) async fn update_skill_impl(&self, org_id: &str, skill: &SkillRecord) -> Result<bool> {
        self.changed(bump(org_id, skill)?).await
    }

    pub(crate) async fn list_skills_impl(&self, org_id: &str, page: &PageRequest) -> Result<Page<SkillRecord>> {
        self.page_of("skills", org_id, page, |_| {}).await
    }

    pub(crate) async fn delete_skill_impl(&self, org_id: &str, id: &str) -> Result<bool> {
        let first = Sql::new("DELETE FROM skills WHERE id = $1 AND org_id = $2").bind(id).bind(org_id);
        let versions = Sql::new("DELETE FROM skill_versions WHERE skill_id = $1 AND org_id = $2").bind(id).bind(org_id);
        Ok(self.db.transaction(&first, &[versions]).await? > 0)
    }

    pub(crate) async fn add_skill_version_impl(
        &self,
        org_id: &str,
        skill: &SkillRecord,
        version: &SkillVersionRecord,
        content: &[u8],
    ) -> Result<bool> {
        let inserted = insert_version(org_id, version, content)?;
        Ok(self.db.transaction(&bump(org_id, skill)?, &[inserted]).await? > 0)
    }

    pub(crate) async fn get_skill_version_impl(
        &self,
        org_id: &str,
        skill_id: &str,
        version: i64,
    ) -> Result<Option<SkillVersionRecord>> {
        let sql = Sql::new("SELECT doc FROM skill_versions WHERE skill_id = $1 AND org_id = $2 AND version = $3")
            .bind(skill_id)
            .bind(org_id)
            .bind(version);
        self.doc(sql).await
    }

    pub(crate) async fn skill_version_content_impl(
        &self,
        org_id: &str,
        skill_id: &str,
        version: i64,
    ) -> Result<Option<Vec<u8>>> {
        let sql = Sql::new("SELECT content FROM skill_versions WHERE skill_id = $1 AND org_id = $2 AND version = $3")
            .bind(skill_id)
            .bind(org_id)
            .bind(version);
        Ok(self.fetch_optional::<(Vec<u8>,)>(sql).await?.map(|(c,)| c))
    }

    pub(crate) async fn list_skill_versions_impl(
        &self,
        org_id: &str,
        skill_id: &str,
        page: &PageRequest,
    ) -> Result<Page<SkillVersionRecord>> {
        self.page_of("skill_versions", org_id, page, |q| {
            q.push(" AND skill_id = ");
            q.push_bind(skill_id);
        })
        .await
    }

    pub(crate) async fn delete_skill_version_impl(
        &self,
        org_id: &str,
        skill: &SkillRecord,
        version: i64,
    ) -> Result<bool> {
        let delete = Sql::new("DELETE FROM skill_versions WHERE skill_id = $1 AND org_id = $2 AND version = $3")
            .bind(skill.id.as_str())
            .bind(org_id)
            .bind(version);
        Ok(self.db.transaction(&bump(org_id, skill)?, &[delete]).await? > 0)
    }
}
