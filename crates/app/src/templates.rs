//! Environment templates: reusable `openai_hosted` configurations (create,
//! retrieve, update, list, delete), and their resolution when an environment
//! names one (`environment_template_id`, on `POST /v1/agents/environments` or
//! a session's inline environment).
//!
//! Resolution takes the template's configuration as it is now and lets each
//! field the request sets replace the template's whole (`null` or omitted:
//! inherited). The network is the exception: a request may narrow the
//! template's policy, never broaden it ([`check_narrower`]). The environment
//! keeps its own copy of the result and the template's id and version, so a
//! later update of the template changes nothing in it, and the template
//! cannot be deleted while environments made from it exist (409).
//!
//! A template is checked as an environment would be (`prepare`: paths, sizes,
//! skills and uploaded files that exist) when it is written; skill references
//! keep their version selector, resolved again by each environment.
//!
//! A template with something to set up (packages, files, setup commands) is
//! prepared once per version (`crate::template_preparation`): `preparing`
//! until its setup ran into a snapshot, then `ready` (environments made from
//! it start from the snapshot) or `failed` with the step and its output
//! (environments from it are refused, 409). Deleting it deletes its snapshots.

use crate::{App, Error, Result, now};
use protocol::environment::{EnvironmentConfig, NetworkAccess, NetworkParam};
use protocol::environment_template::{
    EnvironmentTemplateCreate, EnvironmentTemplateRecord, EnvironmentTemplateUpdate, TemplateOrigin, TemplateStatus,
};
use protocol::ids::EnvironmentTemplateId;
use protocol::list::PageRequest;
use sandbox::egress::policy::normalize_host;
use store::Page;

/// The prefix `prepare` names fields with; a template's fields are top-level.
const PREFIX: &str = "template";
/// Longest template name, in characters.
const MAX_NAME: usize = 256;

/// The environment templates of one organization.
pub struct Service<'a> {
    pub(crate) app: &'a App,
    pub(crate) org: &'a str,
}

impl Service<'_> {
    pub async fn create(&self, req: EnvironmentTemplateCreate) -> Result<EnvironmentTemplateRecord> {
        let (name, mut config) = req.into_parts();
        let file_sizes = self.check(name.as_deref(), &mut config).await?;
        let at = now();
        let record = EnvironmentTemplateRecord {
            id: EnvironmentTemplateId::new(),
            name,
            created_at: at,
            updated_at: at,
            version: 1,
            config,
            file_sizes,
            status: TemplateStatus::Ready,
            preparation_log: None,
            preparation_error: None,
        };
        let mut record = record;
        crate::template_preparation::mark(&mut record);
        self.app.store.create_environment_template(self.org, &record).await?;
        crate::template_preparation::start(self.app, self.org, &record);
        Ok(record)
    }

    /// The template an id names, or 404 (one that is not a template id names none).
    pub async fn get(&self, raw: &str) -> Result<EnvironmentTemplateRecord> {
        let found = match EnvironmentTemplateId::parse(raw) {
            Some(id) => self.app.store.get_environment_template(self.org, &id).await?,
            None => None,
        };
        found.ok_or_else(|| Error::not_found("environment template", raw))
    }

    /// Applies an update (omitted fields kept, `null` ones reset) and checks
    /// the result; environments made from the template are not touched.
    pub async fn update(&self, raw: &str, req: EnvironmentTemplateUpdate) -> Result<EnvironmentTemplateRecord> {
        let mut record = self.get(raw).await?;
        req.apply(&mut record.name, &mut record.config);
        record.file_sizes = self.check(record.name.as_deref(), &mut record.config).await?;
        record.version += 1;
        record.updated_at = now();
        crate::template_preparation::mark(&mut record);
        if !self.app.store.update_environment_template(self.org, &record).await? {
            return Err(Error::Conflict(format!(
                "environment template '{raw}' was changed by another request meanwhile; retry the update"
            )));
        }
        crate::template_preparation::start(self.app, self.org, &record);
        Ok(record)
    }

    pub async fn list(&self, page: &PageRequest) -> Result<Page<EnvironmentTemplateRecord>> {
        Ok(self.app.store.list_environment_templates(self.org, page).await?)
    }

    /// Deletes a template no environment was created from (409 saying how many were).
    pub async fn delete(&self, raw: &str) -> Result<()> {
        let record = self.get(raw).await?;
        let used = self.app.store.environments_from_template(self.org, &record.id).await?;
        if used > 0 {
            return Err(Error::Conflict(format!(
                "environment template '{raw}' is used by {used} environment(s); delete them first"
            )));
        }
        if !self.app.store.delete_environment_template(self.org, &record.id).await? {
            return Err(Error::not_found("environment template", raw));
        }
        self.app.envs.remove_snapshots(record.id.as_str(), None).await;
        Ok(())
    }

    /// Resolves `environment_template_id` in an environment's configuration:
    /// the template's configuration with the request's fields replacing its
    /// own, and where it came from. Unknown, malformed and another
    /// organization's ids are one 404 naming `{prefix}.environment_template_id`.
    pub async fn resolve(&self, prefix: &str, config: &mut EnvironmentConfig) -> Result<Option<TemplateOrigin>> {
        let Some(raw) = config.environment_template_id.take() else { return Ok(None) };
        let template = self.get(&raw).await.map_err(|e| match e {
            Error::NotFound(message) => {
                Error::MissingReference { param: format!("{prefix}.environment_template_id"), message }
            }
            other => other,
        })?;
        if template.status == TemplateStatus::Failed {
            let why = template.preparation_error.as_ref().map_or_else(
                || "its preparation failed".to_string(),
                |e| format!("its preparation failed at `{}`: {}", e.step.as_deref().unwrap_or("setup"), e.message),
            );
            return Err(Error::Conflict(format!("environment template '{raw}' cannot be used: {why}")));
        }
        // The request's own fields, checked first so that errors name them as sent.
        crate::environments::check_config(prefix, config)?;
        if let Some(network) = &config.network {
            check_narrower(prefix, template.config.network.as_ref(), network)?;
        }
        let mut merged = template.config.clone();
        inherit(&mut merged, std::mem::take(config));
        *config = merged;
        Ok(Some(TemplateOrigin { id: template.id, version: template.version }))
    }

    /// Checks a template as an environment's configuration would be checked
    /// (and normalizes its capability directories); returns its files' sizes.
    async fn check(&self, name: Option<&str>, config: &mut EnvironmentConfig) -> Result<Vec<u64>> {
        if let Some(name) = name {
            protocol::validate::text("name", name, 1, MAX_NAME)?;
        }
        let mut probe = config.clone();
        let prepared = self.app.environments(self.org).prepare(PREFIX, &mut probe).await.map_err(unprefixed)?;
        config.capability_directories = probe.capability_directories;
        Ok(prepared.files.iter().map(|f| f.size_bytes).collect())
    }
}

/// A `prepare` error with the template's field named as the request sent it.
fn unprefixed(e: Error) -> Error {
    let strip = |p: String| p.strip_prefix(&format!("{PREFIX}.")).map(str::to_string).unwrap_or(p);
    match e {
        Error::Invalid { param, code, message } => Error::Invalid { param: param.map(strip), code, message },
        Error::MissingReference { param, message } => Error::MissingReference { param: strip(param), message },
        Error::TooLarge(message) => Error::TooLarge(strip(message)),
        other => other,
    }
}

/// Each field `over` sets replaces `base`'s (listed whole, so that a new
/// field of the configuration is a compile error here until it is decided).
fn inherit(base: &mut EnvironmentConfig, over: EnvironmentConfig) {
    fn or<T>(base: &mut Option<T>, over: Option<T>) {
        if over.is_some() {
            *base = over;
        }
    }
    let EnvironmentConfig {
        files,
        env,
        setup_commands,
        packages,
        network,
        capability_directories,
        container_size,
        desktop,
        environment_template_id: _,
        environment_id,
        plugins,
        skills,
        vault_credentials,
    } = over;
    or(&mut base.files, files);
    or(&mut base.env, env);
    or(&mut base.setup_commands, setup_commands);
    or(&mut base.packages, packages);
    or(&mut base.network, network);
    or(&mut base.capability_directories, capability_directories);
    or(&mut base.container_size, container_size);
    or(&mut base.desktop, desktop);
    or(&mut base.environment_id, environment_id);
    or(&mut base.plugins, plugins);
    or(&mut base.skills, skills);
    or(&mut base.vault_credentials, vault_credentials);
    base.environment_template_id = None;
}

/// How much a network access mode reaches: disabled < restricted < enabled.
fn rank(access: NetworkAccess) -> u8 {
    match access {
        NetworkAccess::Disabled => 0,
        NetworkAccess::Restricted => 1,
        NetworkAccess::Enabled => 2,
    }
}

/// An entry covers itself and its subdomains (as the egress policy reads it).
fn covers(entry: &str, host: &str) -> bool {
    host == entry
        || (host.parse::<std::net::IpAddr>().is_err()
            && host.strip_suffix(entry).is_some_and(|rest| rest.ends_with('.')))
}

/// Refuses a network override that reaches anything the template's policy
/// (none: the default, disabled) does not: a wider access mode; under
/// `restricted` both ways, an allowlist entry outside the template's
/// allowlist, a blocklist where the template allows only a list, an allowlist
/// entry overlapping the template's blocklist, or a blocklist that drops one
/// of the template's entries. A 400 naming the field.
pub fn check_narrower(prefix: &str, template: Option<&NetworkParam>, wanted: &NetworkParam) -> Result<()> {
    let p = |f: &str| format!("{prefix}.network.{f}");
    let t = template.cloned().unwrap_or_default();
    let name = |a: NetworkAccess| match a {
        NetworkAccess::Disabled => "disabled",
        NetworkAccess::Restricted => "restricted",
        NetworkAccess::Enabled => "enabled",
    };
    if rank(wanted.access) > rank(t.access) {
        return Err(Error::invalid(
            p("access"),
            format!(
                "'{}' would broaden the template's network policy (access '{}'); an override may only narrow it",
                name(wanted.access),
                name(t.access)
            ),
        ));
    }
    if wanted.access != NetworkAccess::Restricted || t.access != NetworkAccess::Restricted {
        return Ok(());
    }
    let norm = |v: &Option<Vec<String>>| v.iter().flatten().map(|d| normalize_host(d)).collect::<Vec<_>>();
    let (t_allowed, t_blocked) = (norm(&t.allowed_domains), norm(&t.blocked_domains));
    let (w_allowed, w_blocked) = (norm(&wanted.allowed_domains), norm(&wanted.blocked_domains));
    // A blocklist reaches every domain but its own; with neither list, nothing is reached.
    let (t_lists_only, w_lists_only) = (t_blocked.is_empty(), w_blocked.is_empty());
    if t_lists_only {
        if !w_lists_only {
            return Err(Error::invalid(
                p("blocked_domains"),
                "the template reaches only its allowed_domains; a blocklist would reach every other domain",
            ));
        }
        for (i, d) in w_allowed.iter().enumerate() {
            if !t_allowed.iter().any(|t| covers(t, d)) {
                return Err(Error::invalid(
                    p(&format!("allowed_domains[{i}]")),
                    format!("'{d}' is not covered by the template's allowed_domains; an override may only narrow them"),
                ));
            }
        }
        return Ok(());
    }
    if w_lists_only {
        for (i, d) in w_allowed.iter().enumerate() {
            if let Some(b) = t_blocked.iter().find(|b| covers(b, d) || covers(d, b)) {
                return Err(Error::invalid(
                    p(&format!("allowed_domains[{i}]")),
                    format!("'{d}' would reach '{b}', which the template blocks"),
                ));
            }
        }
        return Ok(());
    }
    if let Some(b) = t_blocked.iter().find(|b| !w_blocked.iter().any(|w| covers(w, b))) {
        return Err(Error::invalid(
            p("blocked_domains"),
            format!("must still block '{b}', as the template does; an override may only add to its blocklist"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(access: NetworkAccess, allowed: &[&str], blocked: &[&str]) -> NetworkParam {
        let list = |v: &[&str]| (!v.is_empty()).then(|| v.iter().map(|s| s.to_string()).collect());
        NetworkParam { access, allowed_domains: list(allowed), blocked_domains: list(blocked) }
    }

    fn refused(template: Option<&NetworkParam>, wanted: &NetworkParam) -> Option<String> {
        match check_narrower("environment", template, wanted) {
            Ok(()) => None,
            Err(Error::Invalid { param, .. }) => param,
            Err(other) => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_network_override_may_narrow_the_template_never_broaden_it() {
        use NetworkAccess::{Disabled, Enabled, Restricted};
        let access = Some("environment.network.access".to_string());
        // Access modes: disabled < restricted < enabled; no template policy is disabled.
        assert_eq!(refused(None, &net(Enabled, &[], &[])), access);
        assert_eq!(refused(None, &net(Restricted, &["pypi.org"], &[])), access);
        assert_eq!(refused(None, &net(Disabled, &[], &[])), None);
        let allow = net(Restricted, &["pypi.org", "github.com"], &[]);
        assert_eq!(refused(Some(&allow), &net(Enabled, &[], &[])), access);
        assert_eq!(refused(Some(&allow), &net(Disabled, &[], &[])), None);
        assert_eq!(refused(Some(&net(Enabled, &[], &[])), &allow), None);
        // An allowlist: a subset (subdomains included), never a blocklist.
        assert_eq!(refused(Some(&allow), &net(Restricted, &["PyPI.org", "api.github.com"], &[])), None);
        assert_eq!(refused(Some(&allow), &net(Restricted, &[], &[])), None, "nothing at all is narrower");
        assert_eq!(
            refused(Some(&allow), &net(Restricted, &["pypi.org", "evil.com"], &[])),
            Some("environment.network.allowed_domains[1]".into())
        );
        assert_eq!(
            refused(Some(&allow), &net(Restricted, &["org"], &[])),
            Some("environment.network.allowed_domains[0]".into())
        );
        assert_eq!(
            refused(Some(&allow), &net(Restricted, &[], &["evil.com"])),
            Some("environment.network.blocked_domains".into())
        );
        // A blocklist: a superset, or an allowlist clear of every blocked domain.
        let block = net(Restricted, &[], &["evil.com", "tracker.net"]);
        assert_eq!(refused(Some(&block), &net(Restricted, &[], &["evil.com", "tracker.net", "ads.io"])), None);
        assert_eq!(refused(Some(&block), &net(Restricted, &[], &["evil.com", "net"])), None, "a parent covers it");
        assert_eq!(
            refused(Some(&block), &net(Restricted, &[], &["evil.com"])),
            Some("environment.network.blocked_domains".into())
        );
        assert_eq!(refused(Some(&block), &net(Restricted, &["pypi.org"], &[])), None);
        for reaching in ["cdn.evil.com", "tracker.net", "net"] {
            assert_eq!(
                refused(Some(&block), &net(Restricted, &["pypi.org", reaching], &[])),
                Some("environment.network.allowed_domains[1]".into()),
                "{reaching}"
            );
        }
    }

    #[test]
    fn fields_a_request_sets_replace_the_templates_and_the_rest_are_inherited() {
        let mut base = EnvironmentConfig {
            env: Some([("A".to_string(), "1".to_string())].into()),
            capability_directories: Some(vec!["/workspace/caps".into()]),
            container_size: Some("small".into()),
            ..Default::default()
        };
        let over = EnvironmentConfig {
            env: Some([("B".to_string(), "2".to_string())].into()),
            environment_template_id: Some("envtpl_x".into()),
            ..Default::default()
        };
        inherit(&mut base, over);
        assert_eq!(base.env, Some([("B".to_string(), "2".to_string())].into()));
        assert_eq!(base.capability_directories, Some(vec!["/workspace/caps".to_string()]));
        assert_eq!(base.container_size.as_deref(), Some("small"));
        assert_eq!(base.environment_template_id, None);
    }
}
