//! jq's standard library, parsed once, and the part of it a program needs.
//!
//! jaq compiles every definition it is given, so a call that handed it the
//! whole library (some 200 definitions) would compile all of them for a
//! filter such as `.items[] | .name`. [`Prelude`] keeps the parsed library
//! with which definitions each one calls; [`Prelude::for_program`] gives a
//! program the definitions it names, directly or through others, in their
//! library order. A name resolves to the same definition either way: every
//! definition of a called name is kept, with everything those call, and
//! jaq looks names up in the library before its native functions.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Def, Pattern, Term};
use jaq_core::path::Part;

/// The parsed library and its call graph.
pub struct Prelude {
    defs: Vec<Def<&'static str>>,
    /// The definitions with each name, in library order.
    by_name: BTreeMap<&'static str, Vec<usize>>,
    /// For each definition, the names its body calls.
    calls: Vec<Vec<&'static str>>,
}

/// The library of this plugin (jaq's core, std and JSON definitions),
/// parsed once per instance: in the snapshot of a pre-initialised plugin,
/// so a call only reads it.
pub fn prelude() -> &'static Prelude {
    static PRELUDE: OnceLock<Prelude> = OnceLock::new();
    PRELUDE.get_or_init(|| Prelude::new(jaq_core::defs().chain(jaq_std::defs()).chain(jaq_json::defs()).collect()))
}

impl Prelude {
    fn new(defs: Vec<Def<&'static str>>) -> Prelude {
        let mut by_name: BTreeMap<&'static str, Vec<usize>> = BTreeMap::new();
        for (i, def) in defs.iter().enumerate() {
            by_name.entry(def.name).or_default().push(i);
        }
        let calls = defs
            .iter()
            .map(|def| {
                let mut names = Vec::new();
                called(&def.body, &mut names);
                names
            })
            .collect();
        Prelude { defs, by_name, calls }
    }

    /// Every definition of the library, in order.
    pub fn all(&self) -> impl Iterator<Item = Def<&'static str>> + '_ {
        self.defs.iter().cloned()
    }

    /// The definitions `code` needs, in library order; the whole library
    /// when `code` does not parse as a plain program (the loader then
    /// reports its error, or handles what this does not read).
    pub fn for_program(&self, code: &str) -> Vec<Def<&'static str>> {
        let Some(term) = jaq_core::load::parse(code, |p| p.term()) else { return self.all().collect() };
        let mut pending = Vec::new();
        called(&term, &mut pending);
        let mut kept = BTreeSet::new();
        while let Some(name) = pending.pop() {
            for &i in self.by_name.get(name).into_iter().flatten() {
                if kept.insert(i) {
                    pending.extend(self.calls[i].iter().copied());
                }
            }
        }
        kept.into_iter().map(|i| self.defs[i].clone()).collect()
    }
}

/// Push the name of every filter `term` calls (formats such as `@base64`
/// included) onto `out`.
fn called<'s>(term: &Term<&'s str>, out: &mut Vec<&'s str>) {
    match term {
        Term::Id | Term::Recurse | Term::Num(_) | Term::Var(_) | Term::Break(_) => {}
        Term::Str(format, parts) => {
            out.extend(format.iter().copied());
            for part in parts {
                if let StrPart::Term(t) = part {
                    called(t, out);
                }
            }
        }
        Term::Arr(t) => t.iter().for_each(|t| called(t, out)),
        Term::Obj(entries) => {
            for (k, v) in entries {
                called(k, out);
                v.iter().for_each(|v| called(v, out));
            }
        }
        Term::Neg(t) | Term::Label(_, t) => called(t, out),
        Term::BinOp(l, op, r) => {
            if let BinaryOp::Pipe(Some(pattern)) = op {
                in_pattern(pattern, out);
            }
            called(l, out);
            called(r, out);
        }
        Term::Fold(_, xs, pattern, args) => {
            called(xs, out);
            in_pattern(pattern, out);
            args.iter().for_each(|t| called(t, out));
        }
        Term::TryCatch(t, catch) => {
            called(t, out);
            catch.iter().for_each(|t| called(t, out));
        }
        Term::IfThenElse(branches, otherwise) => {
            for (cond, then) in branches {
                called(cond, out);
                called(then, out);
            }
            otherwise.iter().for_each(|t| called(t, out));
        }
        Term::Def(defs, t) => {
            defs.iter().for_each(|d| called(&d.body, out));
            called(t, out);
        }
        Term::Call(name, args) => {
            out.push(name);
            args.iter().for_each(|t| called(t, out));
        }
        Term::Path(t, path) => {
            called(t, out);
            for (part, _) in &path.0 {
                match part {
                    Part::Index(i) => called(i, out),
                    Part::Range(from, to) => from.iter().chain(to).for_each(|t| called(t, out)),
                }
            }
        }
    }
}

/// The names the key expressions of a destructuring pattern call.
fn in_pattern<'s>(pattern: &Pattern<&'s str>, out: &mut Vec<&'s str>) {
    match pattern {
        Pattern::Var(_) => {}
        Pattern::Arr(items) => items.iter().for_each(|p| in_pattern(p, out)),
        Pattern::Obj(entries) => {
            for (key, p) in entries {
                called(key, out);
                in_pattern(p, out);
            }
        }
    }
}
