//! A small blocking HTTP/1.1 client for the service, over TCP or a Unix socket, keeping its
//! connection alive between requests: what the C API and the load generator talk to it with.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

/// Where a service listens: `host:port`, `http://host:port` or `unix:/path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    Tcp(String),
    Unix(PathBuf),
}

impl Address {
    pub fn parse(s: &str) -> Result<Address, String> {
        let s = s.trim();
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(format!("`{s}`: unix:PATH needs a path"));
            }
            return Ok(Address::Unix(PathBuf::from(path)));
        }
        let host = s.strip_prefix("http://").unwrap_or(s).trim_end_matches('/');
        match host.rsplit_once(':') {
            Some((h, port)) if !h.is_empty() && port.parse::<u16>().is_ok() => {
                Ok(Address::Tcp(host.to_string()))
            }
            _ => Err(format!(
                "`{s}`: an address is HOST:PORT, http://HOST:PORT or unix:PATH"
            )),
        }
    }
}

/// A response: its status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body).map_err(|e| {
            format!(
                "HTTP {}: not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

pub struct Client {
    address: Address,
    timeout: Duration,
    conn: Option<BufReader<Box<dyn Stream>>>,
}

impl Client {
    /// A client of `address`; it connects at the first request. Each read and write waits at most
    /// `timeout`.
    pub fn new(address: Address, timeout: Duration) -> Client {
        Client {
            address,
            timeout,
            conn: None,
        }
    }

    fn connect(&self) -> std::io::Result<BufReader<Box<dyn Stream>>> {
        let stream: Box<dyn Stream> = match &self.address {
            Address::Tcp(host) => {
                let s = TcpStream::connect(host)?;
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(self.timeout))?;
                s.set_write_timeout(Some(self.timeout))?;
                Box::new(s)
            }
            Address::Unix(path) => {
                let s = UnixStream::connect(path)?;
                s.set_read_timeout(Some(self.timeout))?;
                s.set_write_timeout(Some(self.timeout))?;
                Box::new(s)
            }
        };
        Ok(BufReader::new(stream))
    }

    /// Sends one request (`body` as JSON when given) and reads its response. A kept-alive
    /// connection the service closed meanwhile is replaced once.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> std::io::Result<Response> {
        let reused = self.conn.is_some();
        match self.try_request(method, path, body) {
            Err(e) if reused && is_stale(&e) => {
                self.conn = None;
                self.try_request(method, path, body)
            }
            other => other,
        }
    }

    fn try_request(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> std::io::Result<Response> {
        if self.conn.is_none() {
            self.conn = Some(self.connect()?);
        }
        let conn = self.conn.as_mut().expect("connected");
        let result = exchange(conn, method, path, body);
        match &result {
            Ok((_, keep_alive)) if *keep_alive => {}
            _ => self.conn = None,
        }
        result.map(|(r, _)| r)
    }

    pub fn get(&mut self, path: &str) -> std::io::Result<Response> {
        self.request("GET", path, None)
    }

    pub fn post_json(&mut self, path: &str, body: &serde_json::Value) -> std::io::Result<Response> {
        self.request("POST", path, Some(body.to_string().as_bytes()))
    }
}

fn is_stale(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        BrokenPipe | ConnectionReset | ConnectionAborted | UnexpectedEof
    )
}

/// Writes a request and reads its response; says whether the connection stays open.
fn exchange(
    conn: &mut BufReader<Box<dyn Stream>>,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
) -> std::io::Result<(Response, bool)> {
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: ndtune\r\n");
    if let Some(body) = body {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body.unwrap_or_default());
    conn.get_mut().write_all(&bytes)?;
    // The head, line by line, up to the empty line.
    let mut head = Vec::new();
    loop {
        let n = conn.read_until(b'\n', &mut head)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if head.ends_with(b"\r\n\r\n") {
            break;
        }
        if head.len() > 64 * 1024 {
            return Err(invalid("response head over 64 KiB"));
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut parsed = httparse::Response::new(&mut headers);
    parsed
        .parse(&head)
        .map_err(|e| invalid(&format!("bad response head: {e}")))?;
    let status = parsed.code.ok_or_else(|| invalid("no status"))?;
    let header = |name: &str| {
        parsed
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
    };
    let length: usize = match header("content-length") {
        Some(v) => v.parse().map_err(|_| invalid("bad Content-Length"))?,
        None => 0,
    };
    let keep_alive = header("connection").as_deref() != Some("close");
    let mut body = vec![0; length];
    conn.read_exact(&mut body)?;
    Ok((Response { status, body }, keep_alive))
}

fn invalid(message: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_and_bad_ones_are_refused() {
        assert_eq!(
            Address::parse("127.0.0.1:8080"),
            Ok(Address::Tcp("127.0.0.1:8080".into()))
        );
        assert_eq!(
            Address::parse("http://localhost:9/"),
            Ok(Address::Tcp("localhost:9".into()))
        );
        assert_eq!(
            Address::parse("unix:/run/ndtune.sock"),
            Ok(Address::Unix("/run/ndtune.sock".into()))
        );
        for bad in ["", "unix:", "localhost", "host:port", ":80"] {
            assert!(Address::parse(bad).is_err(), "{bad}");
        }
    }
}
