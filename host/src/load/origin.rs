//! Where a plugin's bytes come from: a file of the plugins folder, as a
//! scan saw it, or the program itself.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::SystemTime;

use crate::error::{Error, Result};

/// A file's identity as a scan saw it: size, modification time and (on
/// Unix) inode, so that a file renamed into place is always a new one. A
/// changed stamp means the file must be read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    /// Size in bytes.
    pub len: u64,
    /// Modification time, where the file system keeps one.
    pub modified: Option<SystemTime>,
    /// Inode number (0 off Unix).
    pub inode: u64,
}

/// The stamps of the files read beside a plugin file, each if it is there:
/// its settings (`NAME.toml`) and, for a component without a stub, its
/// types' docs (`NAME.wit`) and its policy file (`NAME.policy.yaml`). A
/// change to any of them is a new version of the plugin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Beside {
    /// `NAME.toml`.
    pub settings: Option<FileStamp>,
    /// `NAME.wit`.
    pub wit: Option<FileStamp>,
    /// `NAME.policy.yaml`.
    pub policy: Option<FileStamp>,
}

impl Beside {
    /// The stamps of the files beside the plugin file at `path` now.
    pub fn of(path: &Path) -> Beside {
        let stamp = |extension: &str| FileStamp::of(&path.with_extension(extension)).ok();
        Beside { settings: stamp("toml"), wit: stamp("wit"), policy: stamp("policy.yaml") }
    }
}

impl FileStamp {
    /// The current stamp of the file at `path`.
    pub fn of(path: &Path) -> Result<FileStamp> {
        let meta = std::fs::metadata(path).map_err(|e| io_error(path, e))?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Ok(FileStamp { len: meta.len(), modified: meta.modified().ok(), inode })
    }
}

pub(crate) fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Io { path: path.display().to_string(), message: e.to_string() }
}

/// Where a plugin's bytes come from.
///
/// A watched host keeps each folder plugin's bytes as the scan read them:
/// what the catalog advertised is exactly what is compiled later, and a
/// file replaced by a broken one never affects the version in the catalog
/// (hot reload relies on this to keep the last good version serving, even
/// one never called). The cost is memory equal to the folder's plugins, so
/// a host that does not watch (a one-shot CLI command) reads the file
/// again when it first loads the plugin, and refuses it if it changed.
#[derive(Debug, Clone)]
pub enum Origin {
    /// A file in the plugins folder, as it was when scanned.
    File {
        /// Its path.
        path: PathBuf,
        /// Its stamp when read.
        stamp: FileStamp,
        /// The stamps of the files beside it when read.
        beside: Beside,
        /// The SHA-256 of its bytes as read: what identifies this version
        /// (a file rewritten with the same bytes is the same version).
        digest: [u8; 32],
        /// Its bytes as read, once kept.
        bytes: OnceLock<bytes::Bytes>,
    },
    /// A plugin embedded in the binary.
    Embedded {
        /// The file name it would have in a folder.
        file_name: &'static str,
        /// Its bytes.
        bytes: &'static [u8],
    },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File { path, .. } => write!(f, "{}", path.display()),
            Origin::Embedded { file_name, .. } => write!(f, "bundled:{file_name}"),
        }
    }
}

impl Origin {
    /// Read the file at `path` whole, keeping its bytes: a regular file of
    /// at most `max_bytes`. A file that changes while it is read (a writer
    /// still copying) is an error; the next scan tries again.
    pub fn file(path: &Path, beside: Beside, max_bytes: u64) -> Result<Origin> {
        let (stamp, bytes) = read_stable(path, max_bytes)?;
        let digest = digest(&bytes);
        Ok(Origin::File { path: path.to_owned(), stamp, beside, digest, bytes: OnceLock::from(bytes) })
    }

    /// Its bytes: the kept ones, else the file read again (an error if its
    /// bytes are no longer the ones the scan read).
    pub fn bytes(&self) -> Result<bytes::Bytes> {
        match self {
            Origin::File { bytes, path, digest, .. } => match bytes.get() {
                Some(bytes) => Ok(bytes.clone()),
                None => read_unchanged(path, digest),
            },
            Origin::Embedded { bytes, .. } => Ok(bytes::Bytes::from_static(bytes)),
        }
    }

    /// Whether it is the file at `path` holding bytes of SHA-256 `digest`.
    pub fn holds(&self, path: &Path, digest: &[u8; 32]) -> bool {
        matches!(self, Origin::File { path: p, digest: d, .. } if p == path && d == digest)
    }

    /// The SHA-256 of a file's bytes, as read.
    pub fn digest(&self) -> Option<&[u8; 32]> {
        match self {
            Origin::File { digest, .. } => Some(digest),
            Origin::Embedded { .. } => None,
        }
    }

    /// Whether its bytes are at hand without reading a file.
    pub fn holds_bytes(&self) -> bool {
        match self {
            Origin::File { bytes, .. } => bytes.get().is_some(),
            Origin::Embedded { .. } => true,
        }
    }

    /// Keep `bytes` (read from this very file version) from now on.
    pub(crate) fn keep(&self, kept: bytes::Bytes) {
        if let Origin::File { bytes, .. } = self {
            let _ = bytes.set(kept);
        }
    }

    /// The same origin, without its kept bytes.
    pub fn without_bytes(self) -> Origin {
        match self {
            Origin::File { path, stamp, beside, digest, .. } => {
                Origin::File { path, stamp, beside, digest, bytes: OnceLock::new() }
            }
            embedded => embedded,
        }
    }

    /// The file's path, for a folder plugin.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Origin::File { path, .. } => Some(path),
            Origin::Embedded { .. } => None,
        }
    }

    /// Whether it is a plugin embedded in the program.
    pub fn is_embedded(&self) -> bool {
        matches!(self, Origin::Embedded { .. })
    }

    /// Whether `self` and `other` are the same file (or embedded plugin),
    /// with the same bytes and the same files beside it.
    pub fn same_as(&self, other: &Origin) -> bool {
        match (self, other) {
            (
                Origin::File { path: a, digest: da, beside: ca, .. },
                Origin::File { path: b, digest: db, beside: cb, .. },
            ) => a == b && da == db && ca == cb,
            (Origin::Embedded { file_name: a, .. }, Origin::Embedded { file_name: b, .. }) => a == b,
            _ => false,
        }
    }

    /// Whether it is the file at `path` with these stamps.
    pub fn is_file_version(&self, path: &Path, stamp: FileStamp, beside: Beside) -> bool {
        matches!(self, Origin::File { path: p, stamp: s, beside: b, .. } if p == path && *s == stamp && *b == beside)
    }

    /// The stamps of the files beside it when it was read, for a file.
    pub fn beside(&self) -> Option<Beside> {
        match self {
            Origin::File { beside, .. } => Some(*beside),
            Origin::Embedded { .. } => None,
        }
    }
}

/// Largest plugin file read by default (the largest real components, an
/// interpreter inside, are tens of MiB); `max_plugin_mb` changes it.
pub const MAX_PLUGIN_BYTES: u64 = 256 << 20;

/// The file's stamp and bytes, read whole, refusing what is not a regular
/// file (a directory, FIFO or device named `*.wasm`), a file over
/// `max_bytes`, and a file that changed while it was read.
fn read_stable(path: &Path, max_bytes: u64) -> Result<(FileStamp, bytes::Bytes)> {
    let refuse = |message: String| Error::Io { path: path.display().to_string(), message };
    let meta = std::fs::metadata(path).map_err(|e| io_error(path, e))?;
    if !meta.is_file() {
        return Err(refuse("not a regular file (a directory, FIFO or device); a plugin is a `.wasm` file".into()));
    }
    if meta.len() > max_bytes {
        return Err(refuse(format!(
            "{} bytes, over the limit of {max_bytes} for a plugin (raise `max_plugin_mb` in quiver.toml)",
            meta.len()
        )));
    }
    let stamp = FileStamp::of(path)?;
    let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
    if FileStamp::of(path)? != stamp || bytes.len() as u64 != stamp.len {
        return Err(Error::Io {
            path: path.display().to_string(),
            message: "the file changed while it was read (still being written?)".into(),
        });
    }
    Ok((stamp, bytes.into()))
}

/// The SHA-256 of `bytes`.
pub(crate) fn digest(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

/// The file's bytes if they still are those of SHA-256 `digest`.
pub(crate) fn read_unchanged(path: &Path, wanted: &[u8; 32]) -> Result<bytes::Bytes> {
    let (_, bytes) = read_stable(path, u64::MAX)?;
    if digest(&bytes) != *wanted {
        return Err(Error::Io {
            path: path.display().to_string(),
            message: "the file changed since it was scanned; a reload will pick up the new version".into(),
        });
    }
    Ok(bytes)
}
