/**
 * What a thrown error says about whether the request left the process, read
 * from the transport's own error codes (Node's `fetch`/undici, `http`, `net`,
 * `dns`, and the names `AbortSignal` gives) anywhere in its cause chain.
 *
 * Ambiguous wins: one sign that the request was in flight is enough. An error
 * that proves nothing left the process is definite; so is anything the
 * transport did not raise (the activity's own checks, a vendor's answer
 * turned into an error). See README "When is an error 'nothing happened'?".
 */

/** The request or the response was in flight: the vendor may have acted. */
const IN_FLIGHT_CODES = new Set([
  'ECONNRESET', // connection reset mid-request or mid-response ("socket hang up")
  'EPIPE', // the socket closed while the request was being written
  'ETIMEDOUT', // a read timed out (raised by `connect`, it is a connect timeout: see below)
  'ECONNABORTED', // axios' request timeout
  'UND_ERR_SOCKET', // undici: the other side closed the socket
  'UND_ERR_CLOSED',
  'UND_ERR_ABORTED',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

/**
 * Families of codes raised while the answer was read, parsed or decoded, so after the request left:
 * llhttp's parse errors (`HPE_HEADER_OVERFLOW`, a proxy's malformed header), zlib's on a corrupt
 * compressed body, HTTP/2's and Node streams' own, and OpenSSL's on a record it could not read (a
 * balancer answering in plain text, a corrupted record). Certificate errors, raised while the
 * connection is set up, have codes of their own (below).
 */
const IN_FLIGHT_CODE_PREFIXES = ['HPE_', 'Z_', 'ERR_HTTP2_', 'ERR_STREAM_', 'ERR_SSL_'];

/** undici raises these before anything is sent (a bad argument, a connection that never opened); every other UND_ERR_ after. */
const UNDICI_BEFORE_SENDING = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED', 'UND_ERR_CONNECT_TIMEOUT']);

/** Calls that run before a connection exists: whatever they raise, nothing was sent on it. */
const BEFORE_CONNECTED_SYSCALLS = new Set(['connect', 'getaddrinfo', 'getnameinfo']);

/** `AbortSignal` reasons: a timeout or an abort mid-request or mid-body. */
const IN_FLIGHT_NAMES = new Set(['AbortError', 'TimeoutError']);

/**
 * Socket reads and writes: they run on a connection that was made, so whatever they raise (an ICMP
 * "host unreachable" on an established connection included) came after the request may have left.
 */
const SOCKET_IO_SYSCALLS = new Set(['read', 'write', 'writev', 'shutdown', 'send', 'sendmsg', 'recv', 'recvmsg']);

/**
 * Routing errors: raised by `connect` they prove no connection was made, but a router can send them
 * for a connection already open too (Linux reports them on the next read or write), so they prove
 * nothing was sent only when `connect` raised them.
 */
const NEVER_SENT_ON_CONNECT_ONLY = new Set(['ENETUNREACH', 'EHOSTUNREACH']);

/** Nothing left the process: no connection was made. */
const NEVER_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_NONAME',
  ...NEVER_SENT_ON_CONNECT_ONLY,
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

export type TransportVerdict =
  | { readonly inFlight: true; readonly sign: string }
  | { readonly inFlight: false; readonly sign: string | null };

/** Whether the error chain shows a request in flight, and which code or name showed it. */
export function transportVerdict(error: unknown): TransportVerdict {
  let neverSent: string | null = null;
  for (const link of errorChain(error)) {
    // An AggregateError (Node's happy-eyeballs connect to several addresses) repeats one member's code
    // without its syscall: its members, which the chain visits next, say what happened.
    if (Array.isArray(link.errors) && link.errors.length > 0) continue;
    const code = typeof link.code === 'string' ? link.code : undefined;
    const syscall = typeof link.syscall === 'string' ? link.syscall : undefined;
    if (code && syscall && (BEFORE_CONNECTED_SYSCALLS.has(syscall) || syscall.startsWith('query'))) {
      neverSent ??= `${syscall} ${code}`;
      continue;
    }
    if (code && IN_FLIGHT_CODES.has(code)) return { inFlight: true, sign: code };
    if (code && IN_FLIGHT_CODE_PREFIXES.some((prefix) => code.startsWith(prefix))) return { inFlight: true, sign: code };
    if (code?.startsWith('UND_ERR_') && !UNDICI_BEFORE_SENDING.has(code)) return { inFlight: true, sign: code };
    if (typeof link.name === 'string' && IN_FLIGHT_NAMES.has(link.name)) return { inFlight: true, sign: link.name };
    if (code && syscall && SOCKET_IO_SYSCALLS.has(syscall)) return { inFlight: true, sign: `${syscall} ${code}` };
    if (code && NEVER_SENT_ON_CONNECT_ONLY.has(code) && syscall !== 'connect') return { inFlight: true, sign: syscall ? `${syscall} ${code}` : code };
    if (code && NEVER_SENT_CODES.has(code)) neverSent ??= code;
  }
  return { inFlight: false, sign: neverSent };
}

interface ErrorLike {
  readonly code?: unknown;
  /** Node's system errors name the call that failed: `connect`, `read`, `write`, `getaddrinfo`… */
  readonly syscall?: unknown;
  readonly name?: unknown;
  readonly cause?: unknown;
  readonly errors?: unknown;
}

/** The error, its causes, and an AggregateError's members (Node's happy-eyeballs connect), each once. */
export function* errorChain(error: unknown): Generator<ErrorLike> {
  const seen = new Set<unknown>();
  const pending: unknown[] = [error];
  while (pending.length > 0 && seen.size < 64) {
    const link = pending.shift();
    if (typeof link !== 'object' || link === null || seen.has(link)) continue;
    seen.add(link);
    yield link as ErrorLike;
    const { cause, errors } = link as ErrorLike;
    pending.push(cause);
    if (Array.isArray(errors)) pending.push(...errors);
  }
}
