//! Agent Skills: folders with a `SKILL.md` (YAML front matter + Markdown)
//! and optional bundled files, read from a skills folder.
//!
//! The scan reads only the front matter (Tier 1: name and description);
//! the body and the bundled files are read when the model asks for them.
//! A path that leaves the skill's folder (`..`, an absolute path, a
//! symbolic link pointing outside) is refused.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// Longest skill name and description (Agent Skills specification).
pub const MAX_NAME: usize = 64;
/// Longest description the specification allows. A longer one is served
/// with a warning (published skills exceed it, and Tier 1 shows a short
/// summary anyway), up to [`MAX_SERVED_DESCRIPTION`].
pub const MAX_DESCRIPTION: usize = 1024;
/// Longest description served at all.
pub const MAX_SERVED_DESCRIPTION: usize = 8 * 1024;

/// Most bundled files listed for one skill.
const MAX_FILES: usize = 200;

/// Largest file `read_skill` returns.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Largest `SKILL.md` (its body is what `read_skill` sends a model).
pub const MAX_SKILL_BYTES: u64 = 256 * 1024;

/// The front-matter fields Quiver uses; the others the specification
/// allows (`license`, `compatibility`, `metadata`, `allowed-tools`) are
/// accepted and ignored.
#[derive(Debug, Clone, Deserialize)]
struct FrontMatter {
    name: String,
    description: String,
}

/// A skill found in the skills folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name (the folder's name).
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// Its folder.
    pub dir: PathBuf,
}

impl Skill {
    /// Read the skill in `dir` (front matter only).
    pub fn load(dir: &Path) -> Result<Skill> {
        Skill::parse(&read_skill_file(dir)?, dir)
    }

    /// The skill whose `SKILL.md` says `text`, in folder `dir` (read
    /// nothing: the front matter's rules only).
    pub fn parse(text: &str, dir: &Path) -> Result<Skill> {
        let path = dir.join(SKILL_FILE);
        let (front, _) = split_front_matter(text).map_err(|reason| invalid(&path, reason))?;
        let front: FrontMatter = serde_saphyr::from_str(front)
            .map_err(|e| invalid(&path, format!("front matter is not valid YAML: {e}")))?;
        let folder = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if let Some(problem) = name_problem(&front.name) {
            let problem = contract_shown(problem);
            return Err(invalid(&path, problem));
        }
        if front.name != folder {
            return Err(invalid(&path, format!("name `{}` must match the folder name `{folder}`", front.name)));
        }
        let description = front.description.trim();
        let length = description.chars().count();
        if description.is_empty() || length > MAX_SERVED_DESCRIPTION {
            return Err(invalid(&path, format!("description must be 1 to {MAX_DESCRIPTION} characters")));
        }
        if length > MAX_DESCRIPTION {
            tracing::warn!(
                skill = %front.name,
                length,
                "the description is longer than the Agent Skills limit of {MAX_DESCRIPTION} characters; served \
                 anyway (Tier 1 shows its first sentence)"
            );
        }
        Ok(Skill { name: front.name, description: description.to_owned(), dir: dir.to_owned() })
    }

    /// The Markdown body of `SKILL.md` (after the front matter).
    pub fn body(&self) -> Result<String> {
        let path = self.dir.join(SKILL_FILE);
        let text = read_skill_file(&self.dir)?;
        let (_, body) = split_front_matter(&text).map_err(|reason| invalid(&path, reason))?;
        Ok(body.trim().to_owned())
    }

    /// The bundled files, as paths relative to the skill folder, sorted
    /// (hidden files and `SKILL.md` left out).
    pub fn files(&self) -> Vec<String> {
        let mut files = Vec::new();
        walk(&self.dir, &self.dir, 0, &mut files);
        files.sort();
        files.truncate(MAX_FILES);
        files
    }

    /// The text of bundled file `relative`, refusing any path outside the
    /// folder; the error says why in words a model can act on.
    pub fn read_file(&self, relative: &str) -> std::result::Result<String, String> {
        let refuse = |why: &str| format!("skill `{}`: file `{relative}` {why}", self.name);
        let path = Path::new(relative);
        if relative.is_empty() || path.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
            return Err(refuse("is outside the skill's folder (use a relative path without `..`)"));
        }
        let root = self.dir.canonicalize().map_err(|e| refuse(&format!("cannot be read: {e}")))?;
        let full = root.join(path).canonicalize().map_err(|_| refuse("does not exist"))?;
        if !full.starts_with(&root) {
            return Err(refuse("is outside the skill's folder (a link leads out of it)"));
        }
        let meta = std::fs::metadata(&full).map_err(|e| refuse(&format!("cannot be read: {e}")))?;
        if !meta.is_file() {
            return Err(refuse("is not a file"));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(refuse(&format!("is {} bytes, over the limit of {MAX_FILE_BYTES}", meta.len())));
        }
        let bytes = std::fs::read(&full).map_err(|e| refuse(&format!("cannot be read: {e}")))?;
        String::from_utf8(bytes).map_err(|_| refuse("is not UTF-8 text"))
    }
}

/// Why `name` is not a valid skill name, if it is not.
pub fn name_problem(name: &str) -> Option<String> {
    let ok = (1..=MAX_NAME).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    (!ok).then(|| format!("name `{name}` must be 1-{MAX_NAME} characters of a-z, 0-9 and single `-`"))
}

/// Split `---\n<yaml>\n---\n<body>`.
fn split_front_matter(text: &str) -> std::result::Result<(&str, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("SKILL.md must start with a `---` line opening the YAML front matter")?;
    let end = rest
        .match_indices("\n---")
        .find(|(i, _)| {
            let after = &rest[i + 4..];
            after.is_empty() || after.starts_with('\n') || after.starts_with("\r\n")
        })
        .map(|(i, _)| i)
        .ok_or("the front matter has no closing `---` line")?;
    let body = rest[end + 4..].trim_start_matches(['\r', '\n']);
    Ok((&rest[..end], body))
}

fn walk(root: &Path, dir: &Path, depth: usize, out: &mut Vec<String>) {
    if depth > 4 || out.len() >= MAX_FILES {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            walk(root, &path, depth + 1, out);
        } else if kind.is_file()
            && !(depth == 0 && name == SKILL_FILE)
            && let Ok(relative) = path.strip_prefix(root)
        {
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The text of `dir`'s `SKILL.md`: a regular file inside the folder (a
/// link may not lead out of it) of at most [`MAX_SKILL_BYTES`].
fn read_skill_file(dir: &Path) -> Result<String> {
    let path = dir.join(SKILL_FILE);
    let root = dir.canonicalize().map_err(|e| io(dir, e))?;
    let full = path.canonicalize().map_err(|e| io(&path, e))?;
    if !full.starts_with(&root) {
        return Err(invalid(&path, "it is a link that leads out of the skill's folder"));
    }
    let meta = std::fs::metadata(&full).map_err(|e| io(&path, e))?;
    if !meta.is_file() {
        return Err(invalid(&path, "it is not a regular file"));
    }
    if meta.len() > MAX_SKILL_BYTES {
        return Err(invalid(&path, format!("it is {} bytes, over the limit of {MAX_SKILL_BYTES}", meta.len())));
    }
    std::fs::read_to_string(&full).map_err(|e| io(&path, e))
}

/// `problem` cut to a length a log line or a status page can carry.
fn contract_shown(problem: String) -> String {
    crate::contract::one_line(&problem, 300)
}

fn io(path: &Path, error: std::io::Error) -> Error {
    Error::Io { path: path.display().to_string(), message: error.to_string() }
}

fn invalid(path: &Path, reason: impl Into<String>) -> Error {
    Error::InvalidSkill { path: path.display().to_string(), reason: reason.into() }
}

/// The skill folders under `dir` (those with a `SKILL.md`), sorted.
pub fn skill_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| io(dir, e))?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(SKILL_FILE).is_file())
        .filter(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
        .collect();
    dirs.sort();
    Ok(dirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("pdf-tools");
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        (root, dir)
    }

    const GOOD: &str = "---\nname: pdf-tools\ndescription: Extract text from PDFs. Use when the user sends a PDF.\n---\n# PDF\nSteps.\n";

    #[test]
    fn reads_front_matter_body_and_files() {
        let (_root, dir) = skill(&[("SKILL.md", GOOD), ("scripts/extract.py", "print(1)"), (".hidden", "x")]);
        let skill = Skill::load(&dir).unwrap();
        assert_eq!(skill.name, "pdf-tools");
        assert!(skill.description.starts_with("Extract text"));
        assert_eq!(skill.body().unwrap(), "# PDF\nSteps.");
        assert_eq!(skill.files(), ["scripts/extract.py"]);
        assert_eq!(skill.read_file("scripts/extract.py").unwrap(), "print(1)");
    }

    #[test]
    fn refuses_paths_outside_the_folder() {
        let (root, dir) = skill(&[("SKILL.md", GOOD)]);
        std::fs::write(root.path().join("secret.txt"), "secret").unwrap();
        let skill = Skill::load(&dir).unwrap();
        for bad in ["../secret.txt", "/etc/passwd", "scripts/../../secret.txt", ""] {
            assert!(skill.read_file(bad).is_err(), "{bad}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.path().join("secret.txt"), dir.join("link.txt")).unwrap();
            let error = skill.read_file("link.txt").unwrap_err();
            assert!(error.contains("outside"), "{error}");
        }
    }

    #[test]
    fn skill_md_is_a_small_file_inside_its_folder() {
        let big = format!("{GOOD}{}", "x".repeat(MAX_SKILL_BYTES as usize));
        let (_root, dir) = skill(&[("SKILL.md", big.as_str())]);
        let error = Skill::load(&dir).unwrap_err().to_string();
        assert!(error.contains("over the limit"), "{error}");
        #[cfg(unix)]
        {
            let (root, dir) = skill(&[("notes.md", "x")]);
            std::fs::write(root.path().join("outside.md"), GOOD).unwrap();
            std::os::unix::fs::symlink(root.path().join("outside.md"), dir.join("SKILL.md")).unwrap();
            let error = Skill::load(&dir).unwrap_err().to_string();
            assert!(error.contains("leads out of the skill's folder"), "{error}");
        }
        let long_name = format!("---\nname: {}\ndescription: x\n---\n", "N".repeat(100_000));
        let (_root, dir) = skill(&[("SKILL.md", long_name.as_str())]);
        let error = Skill::load(&dir).unwrap_err().to_string();
        assert!(error.len() < 1000, "the error echoes the name whole: {} bytes", error.len());
    }

    /// Published skills exceed the specification's 1,024 characters (the
    /// `claude-api` skill's description has 1,068): served, with a warning;
    /// only a description past the hard cap is refused.
    #[test]
    fn an_over_long_description_is_served_up_to_a_hard_cap() {
        let text = format!("---\nname: pdf-tools\ndescription: {}\n---\n", "word ".repeat(214));
        let (_root, dir) = skill(&[("SKILL.md", text.as_str())]);
        assert_eq!(Skill::load(&dir).unwrap().description.chars().count(), 1069);
        let text = format!("---\nname: pdf-tools\ndescription: {}\n---\n", "x".repeat(MAX_SERVED_DESCRIPTION + 1));
        let (_root, dir) = skill(&[("SKILL.md", text.as_str())]);
        assert!(Skill::load(&dir).is_err());
    }

    #[test]
    fn rejects_malformed_front_matter() {
        let cases = [
            "no front matter",
            "---\nname: pdf-tools\n",
            "---\nname: [unclosed\n---\n",
            "---\nname: other-name\ndescription: x\n---\n",
            "---\nname: Pdf_Tools\ndescription: x\n---\n",
            "---\nname: pdf-tools\ndescription: \"\"\n---\n",
            "---\nname: pdf-tools\n---\n",
        ];
        for text in cases {
            let (_root, dir) = skill(&[("SKILL.md", text)]);
            let error = Skill::load(&dir).unwrap_err();
            assert_eq!(error.kind(), crate::error::ErrorKind::InvalidSkill, "{text:?}: {error}");
        }
    }
}
