//! ④ Progressive disclosure: what a model sees before it asks for more.

pub mod tier1;
