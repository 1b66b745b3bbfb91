-- Environment templates: reusable environment configurations. `version`
-- counts updates (a write names the version it read). Environments record
-- the template they were created from in `template_id`, so that deleting a
-- template still in use can say by how many.
CREATE TABLE environment_templates (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX environment_templates_org ON environment_templates(org_id, seq);

ALTER TABLE environments ADD COLUMN template_id TEXT;
CREATE INDEX environments_template ON environments(org_id, template_id);
