//! `impl Store for SqlStore`: the trait's methods, each a call into the
//! resource module that holds its statements.

use super::{Backend, SqlStore};
use crate::{ApiKeyRecord, Artifact, BatchWriter, Page, RequestKey, Result, SessionFilter, Store};
use async_trait::async_trait;
use protocol::admin::Organization;
use protocol::agent::AgentRecord;
use protocol::environment::EnvironmentRecord;
use protocol::environment_template::EnvironmentTemplateRecord;
use protocol::event::Event;
use protocol::file::FileObject;
use protocol::ids::{EnvironmentId, EnvironmentTemplateId};
use protocol::ids::{SessionId, TurnId};
use protocol::item::Item;
use protocol::list::PageRequest;
use protocol::session::SessionRecord;
use protocol::skill::{SkillRecord, SkillVersionRecord};
use protocol::turn::Turn;
use protocol::vault::{Credential, CredentialRecord, Vault};
use std::sync::Arc;

#[async_trait]
impl<B: Backend> Store for SqlStore<B> {
    async fn ping(&self) -> Result<()> {
        self.db.execute(&super::Sql::new("SELECT 1")).await.map(drop)
    }

    async fn join_cluster(&self, node: &crate::NodeSpec) -> Result<Option<Arc<crate::Cluster>>> {
        self.db.join_cluster(node, Arc::clone(&self.sessions)).await
    }

    async fn create_organization(&self, org: &Organization) -> Result<()> {
        self.create_organization_impl(org).await
    }

    async fn get_organization(&self, id: &str) -> Result<Option<Organization>> {
        self.organization_where("id", id).await
    }

    async fn find_organization(&self, name: &str) -> Result<Option<Organization>> {
        self.organization_where("name", name).await
    }

    async fn count_organizations(&self) -> Result<i64> {
        self.count_organizations_impl().await
    }

    async fn create_api_key(&self, key: &ApiKeyRecord) -> Result<()> {
        self.create_api_key_impl(key).await
    }

    async fn find_api_key(&self, hash: &str) -> Result<Option<ApiKeyRecord>> {
        self.find_api_key_impl(hash).await
    }

    async fn list_api_keys(&self, org_id: Option<&str>) -> Result<Vec<ApiKeyRecord>> {
        self.list_api_keys_impl(org_id).await
    }

    async fn revoke_api_key(&self, org_id: Option<&str>, id: &str, at: i64) -> Result<bool> {
        self.revoke_api_key_impl(org_id, id, at).await
    }

    async fn create_agent(&self, org_id: &str, agent: &AgentRecord) -> Result<()> {
        self.create_agent_impl(org_id, agent).await
    }

    async fn get_agent(&self, org_id: &str, id: &str) -> Result<Option<AgentRecord>> {
        self.get_agent_impl(org_id, id).await
    }

    async fn update_agent(&self, org_id: &str, agent: &AgentRecord) -> Result<bool> {
        self.update_agent_impl(org_id, agent).await
    }

    async fn list_agents(&self, org_id: &str, page: &PageRequest) -> Result<Page<AgentRecord>> {
        self.list_agents_impl(org_id, page).await
    }

    async fn delete_agent(&self, org_id: &str, id: &str) -> Result<bool> {
        self.delete_agent_impl(org_id, id).await
    }

    async fn create_session(&self, org_id: &str, session: &SessionRecord) -> Result<()> {
        self.create_session_impl(org_id, session).await
    }

    async fn get_session(&self, org_id: &str, id: SessionId) -> Result<Option<SessionRecord>> {
        self.get_session_impl(org_id, id).await
    }

    async fn put_session(&self, org_id: &str, session: &SessionRecord) -> Result<bool> {
        self.put_session_impl(org_id, session).await
    }

    async fn list_sessions(
        &self,
        org_id: &str,
        filter: &SessionFilter,
        page: &PageRequest,
    ) -> Result<Page<SessionRecord>> {
        self.list_sessions_impl(org_id, filter, page).await
    }

    async fn delete_session(&self, org_id: &str, id: SessionId) -> Result<bool> {
        self.delete_session_impl(org_id, id).await
    }

    async fn get_turn(&self, org_id: &str, id: TurnId) -> Result<Option<Turn>> {
        self.get_turn_impl(org_id, id).await
    }

    async fn count_active_turns(&self, org_id: &str) -> Result<i64> {
        self.count_active_turns_impl(org_id).await
    }

    async fn list_turns(&self, org_id: &str, session_id: SessionId, page: &PageRequest) -> Result<Page<Turn>> {
        self.list_turns_impl(org_id, session_id, page).await
    }

    async fn open_turns(&self) -> Result<Vec<(String, Turn)>> {
        self.open_turns_impl().await
    }

    async fn list_items(
        &self,
        org_id: &str,
        session_id: SessionId,
        turn_id: Option<TurnId>,
        page: &PageRequest,
    ) -> Result<Page<Item>> {
        self.list_items_impl(org_id, session_id, turn_id, page).await
    }

    async fn get_item(&self, org_id: &str, session_id: SessionId, id: &str) -> Result<Option<Item>> {
        self.get_item_impl(org_id, session_id, id).await
    }

    async fn delete_item(&self, org_id: &str, session_id: SessionId, id: &str) -> Result<bool> {
        self.delete_item_impl(org_id, session_id, id).await
    }

    async fn delete_turn(&self, org_id: &str, id: TurnId) -> Result<bool> {
        self.delete_turn_impl(org_id, id).await
    }

    async fn turn_items(&self, org_id: &str, session_id: SessionId, turn_id: TurnId) -> Result<Vec<Item>> {
        self.turn_items_impl(org_id, session_id, turn_id).await
    }

    async fn history(&self, org_id: &str, session_id: SessionId) -> Result<Vec<Item>> {
        self.history_impl(org_id, session_id).await
    }

    async fn put_environment(&self, org_id: &str, env: &EnvironmentRecord) -> Result<()> {
        self.put_environment_impl(org_id, env).await
    }

    async fn get_environment(&self, org_id: &str, id: &EnvironmentId) -> Result<Option<EnvironmentRecord>> {
        self.get_environment_impl(org_id, id).await
    }

    async fn list_environments(&self, org_id: &str, page: &PageRequest) -> Result<Page<EnvironmentRecord>> {
        self.list_environments_impl(org_id, page).await
    }

    async fn delete_environment(&self, org_id: &str, id: &EnvironmentId) -> Result<bool> {
        self.delete_environment_impl(org_id, id).await
    }

    async fn create_environment_template(&self, org_id: &str, template: &EnvironmentTemplateRecord) -> Result<()> {
        self.create_environment_template_impl(org_id, template).await
    }

    async fn get_environment_template(
        &self,
        org_id: &str,
        id: &EnvironmentTemplateId,
    ) -> Result<Option<EnvironmentTemplateRecord>> {
        self.get_environment_template_impl(org_id, id).await
    }

    async fn update_environment_template(&self, org_id: &str, template: &EnvironmentTemplateRecord) -> Result<bool> {
        self.update_environment_template_impl(org_id, template).await
    }

    async fn set_environment_template_status(
        &self,
        org_id: &str,
        template: &EnvironmentTemplateRecord,
    ) -> Result<bool> {
        self.set_environment_template_status_impl(org_id, template).await
    }

    async fn list_environment_templates(
        &self,
        org_id: &str,
        page: &PageRequest,
    ) -> Result<Page<EnvironmentTemplateRecord>> {
        self.list_environment_templates_impl(org_id, page).await
    }

    async fn delete_environment_template(&self, org_id: &str, id: &EnvironmentTemplateId) -> Result<bool> {
        self.delete_environment_template_impl(org_id, id).await
    }

    async fn environments_from_template(&self, org_id: &str, id: &EnvironmentTemplateId) -> Result<i64> {
        self.environments_from_template_impl(org_id, id).await
    }

    async fn sessions_on_environment(&self, org_id: &str, env_id: &EnvironmentId) -> Result<i64> {
        self.sessions_on_environment_impl(org_id, env_id).await
    }

    async fn environment_sessions(&self, org_id: &str, env_id: &EnvironmentId) -> Result<Vec<SessionId>> {
        self.environment_sessions_impl(org_id, env_id).await
    }

    async fn put_artifact(&self, org_id: &str, artifact: &Artifact, content: &[u8]) -> Result<()> {
        self.put_artifact_impl(org_id, artifact, content).await
    }

    async fn artifact_hashes(&self, org_id: &str, session_id: SessionId) -> Result<Vec<(String, String)>> {
        self.artifact_hashes_impl(org_id, session_id).await
    }

    async fn list_artifacts(&self, org_id: &str, session_id: SessionId, page: &PageRequest) -> Result<Page<Artifact>> {
        self.list_artifacts_impl(org_id, session_id, page).await
    }

    async fn get_artifact(&self, org_id: &str, session_id: SessionId, id: &str) -> Result<Option<(Artifact, Vec<u8>)>> {
        self.get_artifact_impl(org_id, session_id, id).await
    }

    async fn delete_artifact(&self, org_id: &str, session_id: SessionId, id: &str) -> Result<bool> {
        self.delete_artifact_impl(org_id, session_id, id).await
    }

    fn batch_writer(&self) -> Result<Box<dyn BatchWriter>> {
        self.db.batch_writer(Arc::clone(&self.sessions))
    }

    async fn max_event_seq(&self) -> Result<i64> {
        self.max_event_seq_impl().await
    }

    async fn last_event_seq(&self, session_id: SessionId) -> Result<i64> {
        self.last_event_seq_impl(session_id).await
    }

    async fn events_after(&self, session_id: SessionId, after: i64, limit: u32) -> Result<Vec<Event>> {
        self.events_after_impl(session_id, after, limit).await
    }

    async fn claim_idempotency_key(&self, org_id: &str, session_id: SessionId, key: &str, at: i64) -> Result<bool> {
        self.claim_idempotency_key_impl(org_id, session_id, key, at).await
    }

    async fn release_idempotency_key(&self, org_id: &str, session_id: SessionId, key: &str) -> Result<()> {
        self.release_idempotency_key_impl(org_id, session_id, key).await
    }

    async fn claim_request_key(
        &self,
        org_id: &str,
        operation: &str,
        key: &str,
        fingerprint: &str,
        at: i64,
    ) -> Result<RequestKey> {
        self.claim_request_key_impl(org_id, operation, key, fingerprint, at).await
    }

    async fn finish_request_key(
        &self,
        org_id: &str,
        operation: &str,
        key: &str,
        status: u16,
        body: &str,
    ) -> Result<()> {
        self.finish_request_key_impl(org_id, operation, key, status, body).await
    }

    async fn release_request_key(&self, org_id: &str, operation: &str, key: &str) -> Result<()> {
        self.release_request_key_impl(org_id, operation, key).await
    }

    async fn create_vault(&self, org_id: &str, vault: &Vault) -> Result<()> {
        self.create_vault_impl(org_id, vault).await
    }

    async fn get_vault(&self, org_id: &str, id: &str) -> Result<Option<Vault>> {
        self.get_vault_impl(org_id, id).await
    }

    async fn put_vault(&self, org_id: &str, vault: &Vault) -> Result<bool> {
        self.put_vault_impl(org_id, vault).await
    }

    async fn list_vaults(
        &self,
        org_id: &str,
        metadata: &[(String, String)],
        page: &PageRequest,
    ) -> Result<Page<Vault>> {
        self.list_vaults_impl(org_id, metadata, page).await
    }

    async fn delete_vault(&self, org_id: &str, id: &str) -> Result<bool> {
        self.delete_vault_impl(org_id, id).await
    }

    async fn existing_vaults(&self, org_id: &str, ids: &[String]) -> Result<Vec<String>> {
        self.existing_vaults_impl(org_id, ids).await
    }

    async fn existing_credentials(&self, org_id: &str, ids: &[String]) -> Result<Vec<String>> {
        self.existing_credentials_impl(org_id, ids).await
    }

    async fn create_credential(&self, org_id: &str, record: &CredentialRecord) -> Result<()> {
        self.create_credential_impl(org_id, record).await
    }

    async fn get_credential(&self, org_id: &str, vault_id: &str, id: &str) -> Result<Option<CredentialRecord>> {
        self.get_credential_impl(org_id, vault_id, id).await
    }

    async fn update_credential(&self, org_id: &str, record: &CredentialRecord) -> Result<bool> {
        self.update_credential_impl(org_id, record).await
    }

    async fn list_credentials(
        &self,
        org_id: &str,
        vault_id: &str,
        metadata: &[(String, String)],
        page: &PageRequest,
    ) -> Result<Page<Credential>> {
        self.list_credentials_impl(org_id, vault_id, metadata, page).await
    }

    async fn delete_credential(&self, org_id: &str, vault_id: &str, id: &str) -> Result<bool> {
        self.delete_credential_impl(org_id, vault_id, id).await
    }

    async fn vault_credentials(&self, org_id: &str, vault_ids: &[String]) -> Result<Vec<CredentialRecord>> {
        self.vault_credentials_impl(org_id, vault_ids).await
    }

    async fn sealed_values(&self) -> Result<Vec<crate::Sealed>> {
        self.sealed_values_impl().await
    }

    async fn replace_sealed(&self, old_check: &[u8], new_check: &[u8], values: &[crate::Sealed]) -> Result<bool> {
        self.replace_sealed_impl(old_check, new_check, values).await
    }

    async fn master_key_check(&self) -> Result<Option<Vec<u8>>> {
        self.master_key_check_impl().await
    }

    async fn init_master_key_check(&self, sealed: &[u8]) -> Result<Vec<u8>> {
        self.init_master_key_check_impl(sealed).await
    }

    async fn create_skill(
        &self,
        org_id: &str,
        skill: &SkillRecord,
        version: &SkillVersionRecord,
        content: &[u8],
    ) -> Result<()> {
        self.create_skill_impl(org_id, skill, version, content).await
    }

    async fn get_skill(&self, org_id: &str, id: &str) -> Result<Option<SkillRecord>> {
        self.get_skill_impl(org_id, id).await
    }

    async fn update_skill(&self, org_id: &str, skill: &SkillRecord) -> Result<bool> {
        self.update_skill_impl(org_id, skill).await
    }

    async fn list_skills(&self, org_id: &str, page: &PageRequest) -> Result<Page<SkillRecord>> {
        self.list_skills_impl(org_id, page).await
    }

    async fn delete_skill(&self, org_id: &str, id: &str) -> Result<bool> {
        self.delete_skill_impl(org_id, id).await
    }

    async fn add_skill_version(
        &self,
        org_id: &str,
        skill: &SkillRecord,
        version: &SkillVersionRecord,
        content: &[u8],
    ) -> Result<bool> {
        self.add_skill_version_impl(org_id, skill, version, content).await
    }

    async fn get_skill_version(
        &self,
        org_id: &str,
        skill_id: &str,
        version: i64,
    ) -> Result<Option<SkillVersionRecord>> {
        self.get_skill_version_impl(org_id, skill_id, version).await
    }

    async fn skill_version_content(&self, org_id: &str, skill_id: &str, version: i64) -> Result<Option<Vec<u8>>> {
        self.skill_version_content_impl(org_id, skill_id, version).await
    }

    async fn list_skill_versions(
        &self,
        org_id: &str,
        skill_id: &str,
        page: &PageRequest,
    ) -> Result<Page<SkillVersionRecord>> {
        self.list_skill_versions_impl(org_id, skill_id, page).await
    }

    async fn delete_skill_version(&self, org_id: &str, skill: &SkillRecord, version: i64) -> Result<bool> {
        self.delete_skill_version_impl(org_id, skill, version).await
    }

    async fn create_file(&self, org_id: &str, file: &FileObject, content: &[u8]) -> Result<()> {
        self.create_file_impl(org_id, file, content).await
    }

    async fn get_file(&self, org_id: &str, id: &str) -> Result<Option<FileObject>> {
        self.get_file_impl(org_id, id).await
    }

    async fn file_content(&self, org_id: &str, id: &str) -> Result<Option<Vec<u8>>> {
        self.file_content_impl(org_id, id).await
    }

    async fn list_files(&self, org_id: &str, purpose: Option<&str>, page: &PageRequest) -> Result<Page<FileObject>> {
        self.list_files_impl(org_id, purpose, page).await
    }

    async fn delete_file(&self, org_id: &str, id: &str) -> Result<bool> {
        self.delete_file_impl(org_id, id).await
    }

    async fn put_environment_content(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        key: &str,
        content: &[u8],
    ) -> Result<()> {
        self.put_environment_content_impl(org_id, env_id, key, content).await
    }

    async fn copy_skill_version_to_environment(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        key: &str,
        skill_id: &str,
        version: i64,
    ) -> Result<bool> {
        self.copy_skill_version_impl(org_id, env_id, key, skill_id, version).await
    }

    async fn copy_file_to_environment(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        key: &str,
        file_id: &str,
    ) -> Result<bool> {
        self.copy_file_impl(org_id, env_id, key, file_id).await
    }

    async fn environment_content(&self, org_id: &str, env_id: &EnvironmentId, key: &str) -> Result<Option<Vec<u8>>> {
        self.environment_content_impl(org_id, env_id, key).await
    }

    async fn delete_environment_contents(&self, org_id: &str, env_id: &EnvironmentId) -> Result<()> {
        self.delete_environment_contents_impl(org_id, env_id).await
    }
}
