//! Uploaded files (their bytes inline: SQLite `BLOB`, PostgreSQL `bytea`)
//! and environments' contents: the skill zips and file bytes an environment
//! was created with, copied (inside the database, never through the server)
//! so that it keeps them whatever happens to the skill or file later.

use super::{Backend, Doc, Sql, SqlStore};
use crate::{Page, Result};
use protocol::file::FileObject;
use protocol::ids::EnvironmentId;
use protocol::list::PageRequest;

impl<B: Backend> SqlStore<B> {
    pub(crate) async fn create_file_impl(&self, org_id: &str, file: &FileObject, content: &[u8]) -> Result<()> {
        let sql = Sql::new("INSERT INTO files (id, org_id, purpose, doc, content) VALUES ($1, $2, $3, $4, $5)")
            .bind(file.id.as_str())
            .bind(org_id)
            .bind(file.purpose.as_str())
            .bind(Doc(serde_json::to_string(file)?))
            .bind(content);
        self.db.execute(&sql).await.map(drop)
    }

    pub(crate) async fn get_file_impl(&self, org_id: &str, id: &str) -> Result<Option<FileObject>> {
        self.doc(Sql::new("SELECT doc FROM files WHERE id = $1 AND org_id = $2").bind(id).bind(org_id)).await
    }

    pub(crate) async fn file_content_impl(&self, org_id: &str, id: &str) -> Result<Option<Vec<u8>>> {
        let sql = Sql::new("SELECT content FROM files WHERE id = $1 AND org_id = $2").bind(id).bind(org_id);
        Ok(self.fetch_optional::<(Vec<u8>,)>(sql).await?.map(|(c,)| c))
    }

    pub(crate) async fn list_files_impl(
        &self,
        org_id: &str,
        purpose: Option<&str>,
        page: &PageRequest,
    ) -> Result<Page<FileObject>> {
        self.page_of("files", org_id, page, |q| {
            if let Some(purpose) = purpose {
                q.push(" AND purpose = ");
                q.push_bind(purpose);
            }
        })
        .await
    }

    pub(crate) async fn delete_file_impl(&self, org_id: &str, id: &str) -> Result<bool> {
        self.changed(Sql::new("DELETE FROM files WHERE id = $1 AND org_id = $2").bind(id).bind(org_id)).await
    }

    pub(crate) async fn put_environment_content_impl(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        key: &str,
        content: &[u8],
    ) -> Result<()> {
        let sql = Sql::new(
            "INSERT INTO environment_contents (org_id, environment_id, key, content) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (environment_id, key) DO UPDATE SET content = excluded.content \
             WHERE environment_contents.org_id = excluded.org_id",
        )
        .bind(org_id)
        .bind(env_id)
        .bind(key)
        .bind(content);
        self.db.execute(&sql).await.map(drop)
    }

    /// Copies the `content` column of the one row `source` (a `SELECT
    /// content FROM … WHERE …` with placeholders from `$4`) into the environment.
    async fn copy_content(&self, org_id: &str, env_id: &EnvironmentId, key: &str, mut source: Sql) -> Result<bool> {
        let mut sql = Sql::new(
            "INSERT INTO environment_contents (org_id, environment_id, key, content) SELECT $1, $2, $3, content ",
        )
        .bind(org_id)
        .bind(env_id)
        .bind(key);
        sql.push(&source.text);
        sql.values.append(&mut source.values);
        sql.push(
            " ON CONFLICT (environment_id, key) DO UPDATE SET content = excluded.content \
             WHERE environment_contents.org_id = excluded.org_id",
        );
        self.changed(sql).await
    }

    pub(crate) async fn copy_skill_version_impl(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        key: &str,
        skill_id: &str,
        version: i64,
    ) -> Result<bool> {
        let source = Sql::new("FROM skill_versions WHERE skill_id = $4 AND org_id = $5 AND version = $6")
            .bind(skill_id)
            .bind(org_id)
            .bind(version);
        self.copy_content(org_id, env_id, key, source).await
    }

    pub(crate) async fn copy_file_impl(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        key: &str,
        file_id: &str,
    ) -> Result<bool> {
        let source = Sql::new("FROM files WHERE id = $4 AND org_id = $5").bind(file_id).bind(org_id);
        self.copy_content(org_id, env_id, key, source).await
    }

    pub(crate) async fn environment_content_impl(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        key: &str,
    ) -> Result<Option<Vec<u8>>> {
        let sql =
            Sql::new("SELECT content FROM environment_contents WHERE environment_id = $1 AND org_id = $2 AND key = $3")
                .bind(env_id)
                .bind(org_id)
                .bind(key);
        Ok(self.fetch_optional::<(Vec<u8>,)>(sql).await?.map(|(c,)| c))
    }

    pub(crate) async fn delete_environment_contents_impl(&self, org_id: &str, env_id: &EnvironmentId) -> Result<()> {
        let sql = Sql::new("DELETE FROM environment_contents WHERE environment_id = $1 AND org_id = $2")
            .bind(env_id)
            .bind(org_id);
        self.db.execute(&sql).await.map(drop)
    }
}
