//! Environment templates. Every update names the `version` it read, so two
//! concurrent updates cannot both win; the environments made from a template
//! carry its id in their `template_id` column, which counts them.

use super::{Backend, Doc, Sql, SqlStore};
use crate::{Page, Result};
use protocol::environment_template::EnvironmentTemplateRecord;
use protocol::ids::EnvironmentTemplateId;
use protocol::list::PageRequest;

impl<B: Backend> SqlStore<B> {
    pub(crate) async fn create_environment_template_impl(
        &self,
        org_id: &str,
        template: &EnvironmentTemplateRecord,
    ) -> Result<()> {
        let sql = Sql::new("INSERT INTO environment_templates (id, org_id, version, doc) VALUES ($1, $2, $3, $4)")
            .bind(template.id.as_str())
            .bind(org_id)
            .bind(template.version)
            .bind(Doc(serde_json::to_string(template)?));
        self.db.execute(&sql).await.map(drop)
    }

    pub(crate) async fn get_environment_template_impl(
        &self,
        org_id: &str,
        id: &EnvironmentTemplateId,
    ) -> Result<Option<EnvironmentTemplateRecord>> {
        let sql = Sql::new("SELECT doc FROM environment_templates WHERE id = $1 AND org_id = $2")
            .bind(id.as_str())
            .bind(org_id);
        self.doc(sql).await
    }

    pub(crate) async fn update_environment_template_impl(
        &self,
        org_id: &str,
        template: &EnvironmentTemplateRecord,
    ) -> Result<bool> {
        let sql = Sql::new(
            "UPDATE environment_templates SET doc = $1, version = $2 WHERE id = $3 AND org_id = $4 AND version = $5",
        )
        .bind(Doc(serde_json::to_string(template)?))
        .bind(template.version)
        .bind(template.id.as_str())
        .bind(org_id)
        .bind(template.version - 1);
        self.changed(sql).await
    }

    pub(crate) async fn set_environment_template_status_impl(
        &self,
        org_id: &str,
        template: &EnvironmentTemplateRecord,
    ) -> Result<bool> {
        let sql = Sql::new("UPDATE environment_templates SET doc = $1 WHERE id = $2 AND org_id = $3 AND version = $4")
            .bind(Doc(serde_json::to_string(template)?))
            .bind(template.id.as_str())
            .bind(org_id)
            .bind(template.version);
        self.changed(sql).await
    }

    pub(crate) async fn list_environment_templates_impl(
        &self,
        org_id: &str,
        page: &PageRequest,
    ) -> Result<Page<EnvironmentTemplateRecord>> {
        self.page_of("environment_templates", org_id, page, |_| {}).await
    }

    pub(crate) async fn delete_environment_template_impl(
        &self,
        org_id: &str,
        id: &EnvironmentTemplateId,
    ) -> Result<bool> {
        let sql =
            Sql::new("DELETE FROM environment_templates WHERE id = $1 AND org_id = $2").bind(id.as_str()).bind(org_id);
        self.changed(sql).await
    }

    pub(crate) async fn environments_from_template_impl(
        &self,
        org_id: &str,
        id: &EnvironmentTemplateId,
    ) -> Result<i64> {
        let sql = Sql::new("SELECT COUNT(*) FROM environments WHERE org_id = $1 AND template_id = $2")
            .bind(org_id)
            .bind(id.as_str());
        Ok(self.fetch_optional::<(i64,)>(sql).await?.map_or(0, |(n,)| n))
    }
}
