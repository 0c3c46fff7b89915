//! The WIT types a plain component's functions take and give, as one
//! small owned tree ([`Ty`]) read out of wit-parser's `Resolve`: what the
//! schemas are written from and what JSON is lowered by, with no `Resolve`
//! kept and no engine type needed.
//!
//! What a model cannot hand over or read back as JSON is refused here,
//! with the reason: resources and their handles, futures, streams, error
//! contexts, maps. Types are acyclic in WIT but may share: a type used
//! twice is copied twice, so a tree is held to [`MAX_NODES`] nodes and
//! [`MAX_DEPTH`] levels, which a component could otherwise blow up
//! exponentially (`tuple<t, t>` of `tuple<t, t>` of …).

use wasmtime::component::wit_parser::{self as wit, Handle, Resolve, TypeDefKind};

use crate::contract::{Shape, sanitize_cut};

/// The most nodes the types of one function may have, all parameters and
/// the result together.
pub const MAX_NODES: usize = 2_000;

/// The deepest a type may nest (an alias counts as a level).
pub const MAX_DEPTH: usize = 24;

/// The most nodes the types of all of a component's functions may have
/// together: each case, flag and field counts, and each 64 bytes of doc
/// text (a type used by many functions counts for each).
pub const MAX_COMPONENT_NODES: usize = 100_000;

/// A WIT value type, resolved: aliases followed, names of fields, cases
/// and flags kept with their doc comments.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    Bool,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F32,
    F64,
    Char,
    String,
    List(Box<Ty>),
    Tuple(Vec<Ty>),
    Option(Box<Ty>),
    Result { ok: Option<Box<Ty>>, err: Option<Box<Ty>> },
    Record(Vec<Named<Ty>>),
    Variant(Vec<Named<Option<Ty>>>),
    Enum(Vec<Named<()>>),
    Flags(Vec<Named<()>>),
}

/// A field, case or flag: its WIT name, what it holds, its doc comment.
#[derive(Debug, Clone, PartialEq)]
pub struct Named<T> {
    pub name: String,
    pub ty: T,
    pub docs: Option<String>,
}

/// Reads types out of one `Resolve`, counting nodes for one function and
/// for the whole component.
pub(super) struct Reader<'a> {
    resolve: &'a Resolve,
    nodes: usize,
    total: &'a std::cell::Cell<usize>,
}

impl<'a> Reader<'a> {
    /// A reader of `resolve`'s types with an empty count for this
    /// function, adding to the component's `total`.
    pub(super) fn new(resolve: &'a Resolve, total: &'a std::cell::Cell<usize>) -> Reader<'a> {
        Reader { resolve, nodes: 0, total }
    }

    /// Count `n` more nodes; an error past either budget.
    fn charge(&mut self, n: usize) -> Result<(), String> {
        self.nodes += n;
        self.total.set(self.total.get().saturating_add(n));
        if self.nodes > MAX_NODES {
            return Err(format!("its types have more than {MAX_NODES} parts"));
        }
        if self.total.get() > MAX_COMPONENT_NODES {
            return Err(format!("the component's types have more than {MAX_COMPONENT_NODES} parts in all"));
        }
        Ok(())
    }

    /// A doc comment, charged by its length.
    fn docs(&mut self, d: &wit::Docs) -> Result<Option<String>, String> {
        let text = docs(d);
        self.charge(text.as_ref().map_or(0, |t| t.len() / 64))?;
        Ok(text)
    }

    /// `ty` as a [`Ty`], or why a model cannot pass or read it.
    pub(super) fn read(&mut self, ty: &wit::Type) -> Result<Ty, String> {
        self.at(ty, 0)
    }

    fn at(&mut self, ty: &wit::Type, depth: usize) -> Result<Ty, String> {
        self.charge(1)?;
        if depth > MAX_DEPTH {
            return Err(format!("its types nest deeper than {MAX_DEPTH} levels"));
        }
        Ok(match ty {
            wit::Type::Bool => Ty::Bool,
            wit::Type::U8 => Ty::U8,
            wit::Type::U16 => Ty::U16,
            wit::Type::U32 => Ty::U32,
            wit::Type::U64 => Ty::U64,
            wit::Type::S8 => Ty::S8,
            wit::Type::S16 => Ty::S16,
            wit::Type::S32 => Ty::S32,
            wit::Type::S64 => Ty::S64,
            wit::Type::F32 => Ty::F32,
            wit::Type::F64 => Ty::F64,
            wit::Type::Char => Ty::Char,
            wit::Type::String => Ty::String,
            wit::Type::ErrorContext => return Err("it passes an `error-context`, which JSON cannot carry".into()),
            wit::Type::Id(id) => {
                let def = self.resolve.types.get(*id).ok_or("it names a type the component does not define")?;
                self.def(&def.kind, def.name.as_deref(), depth)?
            }
        })
    }

    fn def(&mut self, kind: &TypeDefKind, name: Option<&str>, depth: usize) -> Result<Ty, String> {
        let next = depth + 1;
        let named = |what: &str| match name {
            Some(name) => format!("{what} `{name}`"),
            None => what.to_owned(),
        };
        Ok(match kind {
            TypeDefKind::Type(ty) => return self.at(ty, next),
            TypeDefKind::Record(record) => Ty::Record(
                record
                    .fields
                    .iter()
                    .map(|f| Ok(Named { name: f.name.clone(), ty: self.at(&f.ty, next)?, docs: self.docs(&f.docs)? }))
                    .collect::<Result<_, String>>()?,
            ),
            TypeDefKind::Variant(variant) => Ty::Variant(
                variant
                    .cases
                    .iter()
                    .map(|c| {
                        self.charge(1)?;
                        let ty = c.ty.as_ref().map(|t| self.at(t, next)).transpose()?;
                        Ok(Named { name: c.name.clone(), ty, docs: self.docs(&c.docs)? })
                    })
                    .collect::<Result<_, String>>()?,
            ),
            TypeDefKind::Enum(e) => Ty::Enum(self.names(e.cases.iter().map(|c| (&c.name, &c.docs)))?),
            TypeDefKind::Flags(f) => Ty::Flags(self.names(f.flags.iter().map(|c| (&c.name, &c.docs)))?),
            TypeDefKind::Tuple(t) => Ty::Tuple(t.types.iter().map(|t| self.at(t, next)).collect::<Result<_, _>>()?),
            TypeDefKind::Option(t) => Ty::Option(Box::new(self.at(t, next)?)),
            TypeDefKind::Result(r) => Ty::Result {
                ok: r.ok.as_ref().map(|t| self.at(t, next).map(Box::new)).transpose()?,
                err: r.err.as_ref().map(|t| self.at(t, next).map(Box::new)).transpose()?,
            },
            TypeDefKind::List(t) => Ty::List(Box::new(self.at(t, next)?)),
            // The engine does not enable fixed-length lists: such a
            // component would be listed, then fail to compile.
            TypeDefKind::FixedLengthList(..) => {
                return Err(format!("it passes {}, which the engine does not run yet", named("a fixed-length list")));
            }
            TypeDefKind::Resource | TypeDefKind::Handle(_) => {
                let resource = match kind {
                    TypeDefKind::Handle(Handle::Own(id) | Handle::Borrow(id)) => {
                        self.resolve.types.get(*id).and_then(|t| t.name.as_deref())
                    }
                    _ => name,
                };
                let resource = resource.map(|r| format!(" `{r}`")).unwrap_or_default();
                return Err(format!(
                    "it passes a handle to the resource{resource}, which lives in the component, not in JSON"
                ));
            }
            TypeDefKind::Future(_) | TypeDefKind::Stream(_) => {
                return Err(format!(
                    "it passes {} (async), which Quiver does not serve yet",
                    named("a future or stream")
                ));
            }
            TypeDefKind::Map(..) => {
                return Err(format!("it passes {}, which Quiver does not serve yet", named("a map")));
            }
            TypeDefKind::Unknown => return Err("it passes a type the component leaves undefined".into()),
        })
    }
}

/// Longest doc text kept per function, type or plugin (a model reads the
/// first paragraph in Tier 1, the rest in Tier 2).
pub(super) const MAX_DOCS: usize = 2_000;

impl Reader<'_> {
    /// Enum cases or flags, each charged with its doc comment.
    fn names<'n>(
        &mut self,
        items: impl Iterator<Item = (&'n String, &'n wit::Docs)>,
    ) -> Result<Vec<Named<()>>, String> {
        items
            .map(|(name, d)| {
                self.charge(1)?;
                Ok(Named { name: name.clone(), ty: (), docs: self.docs(d)? })
            })
            .collect()
    }
}

/// A doc comment's text, if there is any: text from outside, so through
/// the one sanitiser (lines kept, control characters escaped), cut to
/// [`MAX_DOCS`].
pub(super) fn docs(docs: &wit::Docs) -> Option<String> {
    let text = docs.contents.as_deref().map(str::trim).filter(|d| !d.is_empty())?;
    Some(sanitize_cut(text, Shape::Lines, MAX_DOCS))
}

impl Ty {
    /// Whether `other` is the same type, doc comments aside.
    pub fn same_shape(&self, other: &Ty) -> bool {
        self.without_docs() == other.without_docs()
    }

    fn without_docs(&self) -> Ty {
        let bare = |items: &[Named<()>]| items.iter().map(|n| Named { docs: None, ..n.clone() }).collect();
        match self {
            Ty::List(t) => Ty::List(Box::new(t.without_docs())),
            Ty::Tuple(items) => Ty::Tuple(items.iter().map(Ty::without_docs).collect()),
            Ty::Option(t) => Ty::Option(Box::new(t.without_docs())),
            Ty::Result { ok, err } => Ty::Result {
                ok: ok.as_ref().map(|t| Box::new(t.without_docs())),
                err: err.as_ref().map(|t| Box::new(t.without_docs())),
            },
            Ty::Record(fields) => Ty::Record(
                fields.iter().map(|f| Named { name: f.name.clone(), ty: f.ty.without_docs(), docs: None }).collect(),
            ),
            Ty::Variant(cases) => Ty::Variant(
                cases
                    .iter()
                    .map(|c| Named { name: c.name.clone(), ty: c.ty.as_ref().map(Ty::without_docs), docs: None })
                    .collect(),
            ),
            Ty::Enum(cases) => Ty::Enum(bare(cases)),
            Ty::Flags(flags) => Ty::Flags(bare(flags)),
            other => other.clone(),
        }
    }

    /// How the type reads in WIT (for descriptions and errors).
    pub fn wit(&self) -> String {
        let list = |items: &[Ty]| items.iter().map(Ty::wit).collect::<Vec<_>>().join(", ");
        match self {
            Ty::Bool => "bool".into(),
            Ty::U8 => "u8".into(),
            Ty::U16 => "u16".into(),
            Ty::U32 => "u32".into(),
            Ty::U64 => "u64".into(),
            Ty::S8 => "s8".into(),
            Ty::S16 => "s16".into(),
            Ty::S32 => "s32".into(),
            Ty::S64 => "s64".into(),
            Ty::F32 => "f32".into(),
            Ty::F64 => "f64".into(),
            Ty::Char => "char".into(),
            Ty::String => "string".into(),
            Ty::List(t) => format!("list<{}>", t.wit()),
            Ty::Tuple(items) => format!("tuple<{}>", list(items)),
            Ty::Option(t) => format!("option<{}>", t.wit()),
            Ty::Result { ok, err } => {
                let part = |t: &Option<Box<Ty>>| t.as_ref().map_or("_".to_owned(), |t| t.wit());
                format!("result<{}, {}>", part(ok), part(err))
            }
            Ty::Record(_) => "record".into(),
            Ty::Variant(_) => "variant".into(),
            Ty::Enum(_) => "enum".into(),
            Ty::Flags(_) => "flags".into(),
        }
    }
}
