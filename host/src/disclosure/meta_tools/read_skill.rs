//! `read_skill(name, file?)`: a skill's instructions, or one of its files.
//! In inline mode the instructions are in the system prompt instead.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::line::Line;
use super::tool::{CallContext, CallFuture, MetaTool, View, named, to_value};
use crate::catalog::{Category, SUMMARY_CHARS};
use crate::contract::one_line;
use crate::error::Error;
use crate::invoke::Output;

pub(crate) struct ReadSkill;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
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

impl MetaTool for ReadSkill {
    type Args = Args;
    const NAME: &'static str = "read_skill";
    const CATEGORY: Category = Category::Skill;
    const SECTION: &'static str = "Skills";
    const PURPOSE: &'static str = "Read a skill's instructions (and the list of its files) before a task it \
                                   covers; pass `file` to read one of its files.";
    const LABEL: &'static str = "Skills";
    const NOUN: &'static str = "skill";
    const CHOICE: Option<&'static str> = Some("name");

    /// Name and description cut to 120 characters.
    fn lines(view: &View<'_>) -> Vec<Line> {
        view.catalog
            .skills()
            // Folded, skills are one group: their names rarely share a family.
            .map(|s| Line::described(&s.name, &s.name, &one_line(&s.description, SUMMARY_CHARS)).in_group("skills"))
            .collect()
    }

    fn choices(view: &View<'_>) -> Vec<String> {
        view.catalog.skills().map(|s| s.name.clone()).collect()
    }

    /// In inline mode: every skill's instructions, for the system prompt.
    fn inline(view: &View<'_>) -> Option<String> {
        if !view.policy.allows(Category::Skill) || view.policy.progressive(Category::Skill) {
            return None;
        }
        let mut out = String::new();
        for skill in view.catalog.skills() {
            let body = skill.body().unwrap_or_else(|e| format!("(cannot read: {e})"));
            let _ = write!(out, "\n## Skill: {}\n{}\n\n{}\n", skill.name, skill.description, body);
        }
        Some(out)
    }

    fn run<'a>(cx: CallContext<'a>, args: Args) -> CallFuture<'a> {
        Box::pin(async move {
            let skills = || cx.catalog.skills().map(|s| s.name.clone());
            let skill = named(Self::NAME, "skill", &args.name, cx.catalog.skill(&args.name), skills())?;
            Ok(Output::Json(match args.file {
                Some(file) => {
                    let content = skill
                        .read_file(&file)
                        .map_err(|reason| Error::InvalidArguments { tool: Self::NAME.into(), reason })?;
                    to_value(File { skill: skill.name.clone(), file, content })
                }
                None => to_value(Instructions {
                    skill: skill.name.clone(),
                    instructions: skill.body()?,
                    files: skill.files(),
                }),
            }))
        })
    }
}
