//! Reading input files within bounds, the one way every reader of ndtune opens a file it is
//! given: a regular file only (a FIFO, a device such as `/dev/zero`, a directory, or a symlink
//! to any of them is refused before a byte is read: the file is opened without blocking and
//! checked as opened, so a swap between a check and the open cannot slip through), at most a
//! size limit that depends on the kind of file, and gzip data at most a limit on what it
//! unpacks to (a small bomb cannot fill the memory).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A kind of input and the most ndtune reads of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// What the file is, for messages: "spec file", "model".
    pub what: &'static str,
    /// Bytes, as stored (compressed, where it is).
    pub limit: u64,
    /// Bytes once unpacked, where the kind may be gzip data; `None`: never unpacked.
    pub unpacked: Option<u64>,
}

const MIB: u64 = 1 << 20;

impl Kind {
    /// A kind that is never gzip data.
    pub const fn new(what: &'static str, limit: u64) -> Kind {
        Kind {
            what,
            limit,
            unpacked: None,
        }
    }

    /// A kind that may be gzip data, unpacked to at most `unpacked` bytes.
    pub const fn packed(what: &'static str, limit: u64, unpacked: u64) -> Kind {
        Kind {
            what,
            limit,
            unpacked: Some(unpacked),
        }
    }
}

/// A device profile (`--profile-file`, a JSON object).
pub const PROFILE: Kind = Kind::new("device profile", 4 * MIB);
/// A trained model (`serve --model`, `learn predict`).
pub const MODEL: Kind = Kind::new("model", 512 * MIB);
/// A campaign file of `collect`.
pub const CAMPAIGN: Kind = Kind::new("campaign file", 4 * MIB);
/// A stencil file (`.stencil.toml`).
pub const STENCIL: Kind = Kind::new("stencil file", 4 * MIB);
/// Learning data (CSV, maybe gzip).
pub const LEARNING_DATA: Kind = Kind::packed("learning data", 1 << 30, 4 << 30);
/// A recording replayed (a Kernel Tuner cache, CLTune output), maybe gzip.
pub const RECORDING: Kind = Kind::packed("recording", 512 * MIB, 2 << 30);
/// Kernel Tuner's strategy results given to `bench-strategies --kt`.
pub const KT_RESULTS: Kind = Kind::new("Kernel Tuner results", 64 * MIB);
/// An OpenCL or C source file.
pub const SOURCE: Kind = Kind::new("source file", 16 * MIB);

/// Why an input could not be read: the file and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub path: PathBuf,
    /// The operating system's error, where opening or reading failed (no file, no
    /// permission): its words alone, for callers that name the file and the kind themselves.
    pub io: Option<String>,
    /// The whole message: `cannot read the spec file: ...`, `the model is not a regular
    /// file ...`.
    pub message: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for InputError {}

impl InputError {
    fn new(path: &Path, message: String) -> InputError {
        InputError {
            path: path.to_path_buf(),
            io: None,
            message,
        }
    }

    fn io(path: &Path, what: &str, e: &io::Error) -> InputError {
        InputError {
            path: path.to_path_buf(),
            io: Some(e.to_string()),
            message: format!("cannot read the {what}: {e}"),
        }
    }
}

/// For callers whose errors hold an `io::Error` and name the file themselves: the OS's words
/// where there are some, else the message.
impl From<InputError> for io::Error {
    fn from(e: InputError) -> io::Error {
        io::Error::other(e.io.unwrap_or(e.message))
    }
}

/// Opens `path` for reading if it is a regular file (following symlinks), without blocking on
/// a FIFO. `what` names it in the error.
pub fn open_regular(path: &Path, what: &str) -> Result<File, InputError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| InputError::io(path, what, &e))?;
    let meta = file
        .metadata()
        .map_err(|e| InputError::io(path, what, &e))?;
    if !meta.is_file() {
        return Err(InputError::new(
            path,
            format!("the {what} is not a regular file (a directory, a device or a pipe)"),
        ));
    }
    Ok(file)
}

/// A reader that fails, instead of going on, once more than `limit` bytes came through.
pub struct Limited<R> {
    inner: R,
    left: u64,
    message: String,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // One byte past the limit tells a file of exactly the limit from a larger one.
        let room = (self.left + 1).min(buf.len() as u64) as usize;
        let n = self.inner.read(&mut buf[..room])?;
        if n as u64 > self.left {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                self.message.clone(),
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

fn limited<R: Read>(inner: R, limit: u64, message: String) -> Limited<R> {
    Limited {
        inner,
        left: limit,
        message,
    }
}

fn too_large(what: &str, limit: u64, unpacked: bool) -> String {
    let size = match limit >= MIB {
        true => format!("{} MiB", limit / MIB),
        false => format!("{limit} bytes"),
    };
    match unpacked {
        true => format!("the {what} unpacks to more than {size}; ndtune reads at most that"),
        false => format!("the {what} is larger than {size}; ndtune reads at most that"),
    }
}

/// A streaming reader of `path` within `kind`'s limits, gzip data unpacked (told by its magic
/// bytes): a read past a limit fails saying which.
pub fn reader(path: &Path, kind: Kind) -> Result<Box<dyn Read>, InputError> {
    let file = open_regular(path, kind.what)?;
    let mut raw = io::BufReader::new(limited(
        file,
        kind.limit,
        too_large(kind.what, kind.limit, false),
    ));
    let Some(unpacked) = kind.unpacked else {
        return Ok(Box::new(raw));
    };
    let gzip = {
        use io::BufRead;
        let head = raw
            .fill_buf()
            .map_err(|e| InputError::io(path, kind.what, &e))?;
        head.starts_with(&GZIP)
    };
    Ok(match gzip {
        true => Box::new(limited(
            flate2::bufread::MultiGzDecoder::new(raw),
            unpacked,
            too_large(kind.what, unpacked, true),
        )),
        false => Box::new(raw),
    })
}

/// The magic bytes of gzip data.
const GZIP: [u8; 2] = [0x1f, 0x8b];

/// `bytes` unpacked where they are gzip data (at most `kind`'s unpacked limit), else as they
/// are: for data already in memory.
pub fn unpack(bytes: &[u8], kind: Kind) -> Result<std::borrow::Cow<'_, [u8]>, String> {
    let Some(unpacked) = kind.unpacked.filter(|_| bytes.starts_with(&GZIP)) else {
        return Ok(std::borrow::Cow::Borrowed(bytes));
    };
    let mut out = Vec::new();
    limited(
        flate2::read::MultiGzDecoder::new(bytes),
        unpacked,
        too_large(kind.what, unpacked, true),
    )
    .read_to_end(&mut out)
    .map_err(|e| match e.kind() {
        io::ErrorKind::FileTooLarge => e.to_string(),
        _ => format!("not gzip data: {e}"),
    })?;
    Ok(std::borrow::Cow::Owned(out))
}

/// The bytes of `path` (gzip data unpacked) within `kind`'s limits.
pub fn read_bytes(path: &Path, kind: Kind) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::new();
    reader(path, kind)?
        .read_to_end(&mut bytes)
        .map_err(|e| match e.kind() {
            io::ErrorKind::FileTooLarge => InputError::new(path, e.to_string()),
            _ => InputError::io(path, kind.what, &e),
        })?;
    Ok(bytes)
}

/// The text of `path` (gzip data unpacked) within `kind`'s limits: bytes that are not UTF-8
/// are an error naming the line and column.
pub fn read_text(path: &Path, kind: Kind) -> Result<String, InputError> {
    let bytes = read_bytes(path, kind)?;
    String::from_utf8(bytes).map_err(|e| {
        let (line, column) = crate::text::byte_line_col(e.as_bytes(), e.utf8_error().valid_up_to());
        InputError::new(
            path,
            format!("{line}:{column}: the {} is not UTF-8 text", kind.what),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const SMALL: Kind = Kind::packed("test file", 100, 1000);

    #[test]
    fn devices_fifos_directories_and_links_to_them_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let link = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        for path in [Path::new("/dev/zero"), &fifo, &link, dir.path()] {
            let e = read_bytes(path, SMALL).unwrap_err();
            assert!(e.message.contains("not a regular file"), "{e}");
        }
        let e = read_bytes(&dir.path().join("none"), SMALL).unwrap_err();
        assert!(e.to_string().contains("cannot read the test file"), "{e}");
    }

    #[test]
    fn limits_hold_for_plain_and_gzip_data() {
        let dir = tempfile::tempdir().unwrap();
        let exact = dir.path().join("exact");
        std::fs::write(&exact, [b'a'; 100]).unwrap();
        assert_eq!(read_bytes(&exact, SMALL).unwrap().len(), 100);
        let over = dir.path().join("over");
        std::fs::write(&over, [b'a'; 101]).unwrap();
        let e = read_bytes(&over, SMALL).unwrap_err();
        assert!(e.message.contains("larger than 100 bytes"), "{e}");
        // A bomb: 1 MiB of zeros packs to about 1 KiB, over the unpacked limit.
        let bomb = dir.path().join("bomb.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![0u8; 1 << 20]).unwrap();
        let packed = gz.finish().unwrap();
        std::fs::write(&bomb, &packed).unwrap();
        let big = Kind {
            limit: 1 << 20,
            ..SMALL
        };
        let e = read_bytes(&bomb, big).unwrap_err();
        assert!(e.message.contains("unpacks to more than 1000 bytes"), "{e}");
        let e = unpack(&packed, big).unwrap_err();
        assert!(e.contains("unpacks to more than 1000 bytes"), "{e}");
        let plain = Kind::new("plain file", 1 << 20);
        assert_eq!(read_bytes(&bomb, plain).unwrap(), packed, "never unpacked");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(b"x,y\n1,2\n").unwrap();
        std::fs::write(&bomb, gz.finish().unwrap()).unwrap();
        assert_eq!(read_text(&bomb, big).unwrap(), "x,y\n1,2\n");
    }

    #[test]
    fn text_that_is_not_utf8_names_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad");
        std::fs::write(&bad, b"ok\nab\xff").unwrap();
        let e = read_text(&bad, SMALL).unwrap_err();
        assert!(e.message.starts_with("2:3: "), "{e}");
    }
}
