//! Reading a user's input file (a scenario, a schedule): a regular file
//! only (never a pipe, a device or a directory, which could block or never
//! end), of bounded size, holding UTF-8 text without NUL bytes. Every
//! command reads its input files through [`read_input`] (scenarios,
//! schedules, sweep shards: at most [`MAX_INPUT_BYTES`]) or, for a report
//! document `zkcheck report` renders (a long run's trace is megabytes),
//! [`read_input_up_to`] with [`MAX_REPORT_BYTES`].

//!
//! Below every file format: [`error`] is the located error of a user's file
//! (`FILE:LINE: key KEY: MESSAGE`, [`error::clip`] for quoting a user's
//! value), [`keyed_file`] the TOML document it locates keys in. Scenarios,
//! schedules, tapes and choice files all report through them.

pub mod error;
pub mod keyed_file;

use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest input file accepted, in bytes. Shipped scenarios are under 4 KiB
/// and schedules under 64 KiB; a file beyond this is not one of ours.
pub const MAX_INPUT_BYTES: u64 = 1024 * 1024;

/// Largest report document `zkcheck report` reads, in bytes: a report
/// carries every event of its runs' traces (a long run's is about 10 MB).
pub const MAX_REPORT_BYTES: u64 = 256 * 1024 * 1024;

/// Why an input file cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("{}: cannot read: {message}", file.display())]
    Unreadable { file: PathBuf, message: String },
    #[error("{}: not a regular file ({kind}); give the path of a scenario or schedule file", file.display())]
    NotAFile { file: PathBuf, kind: &'static str },
    #[error("{}: {bytes} bytes is larger than the {limit}-byte limit of this input file", file.display())]
    TooLarge {
        file: PathBuf,
        bytes: u64,
        limit: u64,
    },
    #[error("{}:{line}: not UTF-8 text", file.display())]
    NotText { file: PathBuf, line: usize },
    #[error("{}:{line}: a NUL byte (column {column}); input files are text", file.display())]
    NulByte {
        file: PathBuf,
        line: usize,
        column: usize,
    },
}

impl InputError {
    /// The file named in the error.
    pub fn file(&self) -> &Path {
        match self {
            InputError::Unreadable { file, .. }
            | InputError::NotAFile { file, .. }
            | InputError::TooLarge { file, .. }
            | InputError::NotText { file, .. }
            | InputError::NulByte { file, .. } => file,
        }
    }

    /// The 1-based line the problem is on (0: the file as a whole).
    pub fn line(&self) -> usize {
        match self {
            InputError::NotText { line, .. } | InputError::NulByte { line, .. } => *line,
            _ => 0,
        }
    }
}

/// Reads `file` as text: a regular file of at most [`MAX_INPUT_BYTES`].
pub fn read_input(file: &Path) -> Result<String, InputError> {
    read_input_up_to(file, MAX_INPUT_BYTES)
}

/// Reads `file` as text: a regular file of at most `limit` bytes.
pub fn read_input_up_to(file: &Path, limit: u64) -> Result<String, InputError> {
    let unreadable = |error: std::io::Error| InputError::Unreadable {
        file: file.to_path_buf(),
        message: error.to_string(),
    };
    // Look before opening: opening a named pipe blocks until a writer comes.
    let metadata = std::fs::metadata(file).map_err(unreadable)?;
    if !metadata.is_file() {
        return Err(InputError::NotAFile {
            file: file.to_path_buf(),
            kind: file_kind(&metadata),
        });
    }
    let too_large = |bytes| InputError::TooLarge {
        file: file.to_path_buf(),
        bytes,
        limit,
    };
    if metadata.len() > limit {
        return Err(too_large(metadata.len()));
    }
    // The file may grow between the look and the read: read one byte more
    // than the limit, never the whole file.
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    std::fs::File::open(file)
        .map_err(unreadable)?
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    text_of(file, bytes)
}

fn text_of(file: &Path, bytes: Vec<u8>) -> Result<String, InputError> {
    let line_of = |offset: usize| bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
    if let Some(offset) = bytes.iter().position(|&b| b == 0) {
        let line_start = bytes[..offset]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        return Err(InputError::NulByte {
            file: file.to_path_buf(),
            line: line_of(offset),
            column: offset - line_start + 1,
        });
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(error) => {
            let offset = error.utf8_error().valid_up_to();
            let bytes = error.into_bytes();
            Err(InputError::NotText {
                file: file.to_path_buf(),
                line: bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1,
            })
        }
    }
}

fn file_kind(metadata: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let kind = metadata.file_type();
        if kind.is_fifo() {
            return "a named pipe";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if metadata.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_devices_directories_and_binary() {
        assert!(matches!(
            read_input(Path::new("/dev/zero")),
            Err(InputError::NotAFile {
                kind: "a device",
                ..
            })
        ));
        assert!(matches!(
            read_input(Path::new("/")),
            Err(InputError::NotAFile {
                kind: "a directory",
                ..
            })
        ));
        let error = text_of(Path::new("f"), b"a = 1\nb\0c = 2\n".to_vec()).unwrap_err();
        assert_eq!(
            error,
            InputError::NulByte {
                file: "f".into(),
                line: 2,
                column: 2
            }
        );
        let error = text_of(Path::new("f"), b"a\n\n\xff".to_vec()).unwrap_err();
        assert_eq!(error.line(), 3);
    }
}
