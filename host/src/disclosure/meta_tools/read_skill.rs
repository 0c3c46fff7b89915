//! `read_skill(name, file?)`: a skill's instructions, or one of its files.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CallContext, CallFuture, MetaTool, View, definition, parse_args, unknown};
use crate::catalog::{Category, SUMMARY_CHARS};
use crate::disclosure::formats::{ToolDef, one_line};
use crate::disclosure::policy::SkillMode;

pub(crate) struct ReadSkill;

const NAME: &str = "read_skill";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The skill to read.
    name: String,
    /// A file of the skill to read instead of its instructions (a path from its file list).
    file: Option<String>,
}

#[derive(Serialize)]
struct Instructions {
    skill: String,
    instructions: String,
    files: Vec<String>,
}

#[derive(Serialize)]
struct File {
    skill: String,
    file: String,
    content: String,
}

/// The Tier-1 lines of the skills: name and description cut to 120 characters.
pub(crate) fn stub_lines(view: &View<'_>) -> Vec<String> {
    view.catalog.skills().map(|s| format!("- {}: {}", s.name, one_line(&s.description, SUMMARY_CHARS))).collect()
}

impl MetaTool for ReadSkill {
    fn name(&self) -> &'static str {
        NAME
    }

    fn definition(&self, view: &View<'_>) -> Option<ToolDef> {
        let offered = view.policy.allows(Category::Skill) && view.policy.skills == SkillMode::Progressive;
        let lines = stub_lines(view);
        if !offered || lines.is_empty() {
            return None;
        }
        let names: Vec<String> = view.catalog.skills().map(|s| s.name.clone()).collect();
        let description = format!(
            "Read a skill's instructions (and the list of its files) before a task it covers; pass `file` to \
             read one of its files.\nSkills:\n{}",
            lines.join("\n")
        );
        Some(definition::<Args>(NAME, description, Category::Skill, &[("name", &names)]))
    }

    fn call<'a>(&'a self, cx: CallContext<'a>, args: Value) -> CallFuture<'a> {
        Box::pin(async move {
            let args: Args = parse_args(NAME, args)?;
            let skill = cx
                .catalog
                .skill(&args.name)
                .filter(|_| cx.policy.allows(Category::Skill))
                .ok_or_else(|| unknown(NAME, "skill", &args.name, cx.catalog.skills().map(|s| s.name.clone())))?;
            let value = match args.file {
                Some(file) => {
                    let content = skill
                        .read_file(&file)
                        .map_err(|reason| crate::Error::InvalidArguments { tool: NAME.into(), reason })?;
                    serde_json::to_value(File { skill: skill.name.clone(), file, content })
                }
                None => serde_json::to_value(Instructions {
                    skill: skill.name.clone(),
                    instructions: skill.body()?,
                    files: skill.files(),
                }),
            };
            Ok(value.expect("plain data serializes"))
        })
    }
}
