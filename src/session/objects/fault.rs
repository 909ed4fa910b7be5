//! Writes that can be made to fail, for tests of a disk that fails mid-write (EIO, which a
//! tmpfs cannot produce): without `cfg(test)` they are plain writes.

use std::io::Write;

/// How many more bytes a store (and every clone of it) may write before each write fails
/// with `EIO`; unlimited unless a test sets it.
#[derive(Debug, Clone, Default)]
pub struct Budget(#[cfg(test)] std::sync::Arc<std::sync::Mutex<Option<usize>>>);

impl Budget {
    #[cfg(test)]
    pub fn set(&self, bytes: Option<usize>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = bytes;
    }

    #[cfg(test)]
    fn check(&self, len: usize) -> std::io::Result<()> {
        let mut left = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match *left {
            Some(bytes) if bytes < len => Err(std::io::Error::from_raw_os_error(libc::EIO)),
            Some(bytes) => {
                *left = Some(bytes - len);
                Ok(())
            }
            None => Ok(()),
        }
    }

    #[cfg(not(test))]
    fn check(&self, _len: usize) -> std::io::Result<()> {
        Ok(())
    }

    pub fn write_all(&self, file: &mut std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
        self.check(bytes.len())?;
        file.write_all(bytes)
    }
}

/// A pack file whose writes count against a [`Budget`].
pub struct Faulty(pub std::fs::File, pub Budget);

impl Write for Faulty {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.1.check(bytes.len())?;
        self.0.write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
