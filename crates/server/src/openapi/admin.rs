//! The operations of administration (organizations and keys, scope `admin`)
//! and of operations (health, readiness, metrics, this document).

use super::op::{Op, of};
use super::{Doc, views};
use protocol::admin::{ApiKey, ApiKeyCreate, ApiKeyCreated, Organization, OrganizationCreate};
use protocol::list::List;

pub(super) fn add(doc: &mut Doc) {
    doc.tag("Admin", "Organizations and API keys of the whole server (scope `admin`).");
    doc.add(
        Op::post("/v1/admin/organizations", "createOrganization", "Create an organization")
            .body(of::<OrganizationCreate>)
            .json(of::<Organization>)
            .errors(&[409]),
    );
    doc.add(
        Op::post("/v1/admin/keys", "createApiKey", "Create an API key")
            .about("The secret `key` is shown in this answer only.")
            .body(of::<ApiKeyCreate>)
            .json(of::<ApiKeyCreated>),
    );
    doc.add(Op::get("/v1/admin/keys", "listApiKeys", "List API keys").json(of::<List<ApiKey>>));
    doc.add(Op::delete("/v1/admin/keys/{key_id}", "revokeApiKey", "Revoke an API key").json(of::<ApiKey>));

    doc.tag("Ops", "Liveness, readiness, metrics and this document; no API key needed.");
    doc.add(Op::get("/v1/openapi.json", "getOpenApiDocument", "This document").public().json(views::document));
    doc.add(Op::get("/healthz", "getHealth", "Liveness").public().json(views::health));
    doc.add(
        Op::get("/readyz", "getReadiness", "Readiness: the store answers; the node's view of its cluster")
            .public()
            .json(views::readiness)
            .errors(&[503]),
    );
    doc.add(
        Op::get("/metrics", "getMetrics", "Prometheus metrics")
            .public()
            .answers("text/plain", views::text)
            .about("Request counts and latency histograms by route and status, in the text exposition format."),
    );
}
