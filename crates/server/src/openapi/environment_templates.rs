//! The operations of environment templates.

use super::Doc;
use super::op::{Op, of};
use protocol::environment_template::{
    EnvironmentTemplate, EnvironmentTemplateCreate, EnvironmentTemplateDeleted, EnvironmentTemplateUpdate,
};
use protocol::list::List;

const TEMPLATES: &str = "/v1/agents/environments/templates";
const TEMPLATE: &str = "/v1/agents/environments/templates/{environment_template_id}";

pub(super) fn add(doc: &mut Doc) {
    doc.tag(
        "Environment templates",
        "Reusable environment configurations: `environment_template_id` on an environment (or a session's inline \
         one) starts from a template, the request's fields replacing its own; network overrides may only narrow \
         its policy.",
    );
    doc.add(
        Op::post(TEMPLATES, "createEnvironmentTemplate", "Create an environment template")
            .about(
                "Checked as an environment's configuration is (skills and files must exist). With packages, files or \
                 setup commands its `status` is `preparing` while that setup runs once into a snapshot, then \
                 `ready` (`preparation_log`; environments made from it start from the snapshot without running \
                 setup) or `failed` (`preparation_error`; environments from it are refused, 409); with none, \
                 `ready` at once. `env` values, setup commands and file and skill contents are kept but never shown.",
            )
            .body(of::<EnvironmentTemplateCreate>)
            .json(of::<EnvironmentTemplate>)
            .errors(&[404]),
    );
    doc.add(
        Op::get(TEMPLATES, "listEnvironmentTemplates", "List environment templates")
            .list()
            .json(of::<List<EnvironmentTemplate>>),
    );
    doc.add(
        Op::get(TEMPLATE, "retrieveEnvironmentTemplate", "Retrieve an environment template")
            .json(of::<EnvironmentTemplate>),
    );
    doc.add(
        Op::post(TEMPLATE, "updateEnvironmentTemplate", "Update an environment template")
            .about(
                "Omitted fields are kept, `null` resets one, a value replaces it whole; `version` goes up by one and \
                 the new version is prepared again. Environments already created from it do not change.",
            )
            .body(of::<EnvironmentTemplateUpdate>)
            .json(of::<EnvironmentTemplate>)
            .errors(&[409]),
    );
    doc.add(
        Op::delete(TEMPLATE, "deleteEnvironmentTemplate", "Delete an environment template")
            .about("Refused (409, saying how many) while environments created from it exist.")
            .json(of::<EnvironmentTemplateDeleted>)
            .errors(&[409]),
    );
}
