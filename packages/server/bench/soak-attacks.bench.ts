/**
 * The attackers of `pnpm soak` (soak.bench.ts): raw TCP sockets that hold the
 * service's connections open the ways a hostile client does. Each attack keeps
 * a fixed number of slots busy; a slot whose socket the service closes is
 * opened again after a pause (as an attacker would), up to a cap on opens, so
 * every loop is bounded in count as well as in time. The service may answer an
 * attacker (408, 413, 429, 503...) or close on it: both are counted, neither is
 * an error of the soak.
 */
import net from "node:net";

export interface AttackTarget {
  host: string;
  port: number;
  /** Source addresses the attacker's sockets are bound to (127.0.0.2, ...), taken in turn. */
  sourceAddresses: string[];
}

export interface AttackStats {
  slots: number;
  /** The cap on opens (first and again) in the phase; `capReached` once it stopped the attack reopening. */
  maxOpens: number;
  capReached: boolean;
  opened: number;
  openNow: number;
  peakOpen: number;
  /** The status line of the service's answer, by status ("408"), or "other" when it was not HTTP. */
  answers: Map<string, number>;
  /** Connected sockets the service closed or reset without answering. */
  closedUnanswered: number;
  /** Connections that never opened, by error code (ECONNREFUSED, ETIMEDOUT...). */
  connectErrors: Map<string, number>;
  /** Errors on open sockets, by code (ECONNRESET, EPIPE...). */
  socketErrors: Map<string, number>;
  /** Bytes the attackers sent. */
  bytesSent: number;
}

export interface RunningAttack {
  name: string;
  stats: AttackStats;
  stop(): Promise<void>;
}

interface SocketAttackOptions {
  name: string;
  target: AttackTarget;
  slots: number;
  /** What a fresh connection sends at once (the request line and headers, or nothing). */
  opening: (slot: number) => string;
  /** Sent a little at a time after the opening, `bytesPerSecond` per socket, or nothing when absent. */
  trickle?: { source: (slot: number) => Iterator<string>; bytesPerSecond: number };
  /** Connections being opened at once: a flood opens as fast as the kernel's accept queue allows. */
  connectParallel: number;
  /** A closed slot is opened again after this pause. */
  reopenDelayMs: number;
  /** Every open, first or again, counts: the attack stops opening at this many. */
  maxOpens: number;
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.name : "unknown");
}

/** Keeps `slots` sockets open against the target, each doing what the options say, until stopped. */
/** An attack's counters before its first socket. */
export function emptyAttackStats(slots: number, maxOpens: number): AttackStats {
  return {
    slots,
    maxOpens,
    capReached: false,
    opened: 0,
    openNow: 0,
    peakOpen: 0,
    answers: new Map(),
    closedUnanswered: 0,
    connectErrors: new Map(),
    socketErrors: new Map(),
    bytesSent: 0,
  };
}

export function socketAttack(options: SocketAttackOptions): RunningAttack {
  const stats = emptyAttackStats(options.slots, options.maxOpens);
  const sockets = new Set<net.Socket>();
  const trickling = new Map<net.Socket, Iterator<string>>();
  const timers = new Set<NodeJS.Timeout>();
  const waitingToConnect: number[] = [];
  let connecting = 0;
  let attempts = 0;
  let running = true;

  const schedule = (fn: () => void, ms: number) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  };

  const pump = () => {
    while (running && connecting < options.connectParallel && waitingToConnect.length > 0 && attempts < options.maxOpens) {
      open(waitingToConnect.shift() as number);
    }
    // A slot waits to reopen and may not: the bound, not the service, is holding the attack back.
    if (running && waitingToConnect.length > 0 && attempts >= options.maxOpens) stats.capReached = true;
  };

  const open = (slot: number) => {
    attempts++;
    connecting++;
    const localAddress = options.target.sourceAddresses[slot % options.target.sourceAddresses.length];
    const socket = net.connect({ host: options.target.host, port: options.target.port, localAddress });
    sockets.add(socket);
    let connected = false;
    let answered = false;
    socket.setNoDelay(true);
    socket.on("connect", () => {
      connected = true;
      connecting--;
      stats.opened++;
      stats.openNow++;
      stats.peakOpen = Math.max(stats.peakOpen, stats.openNow);
      const opening = options.opening(slot);
      if (opening) {
        socket.write(opening);
        stats.bytesSent += Buffer.byteLength(opening);
      }
      if (options.trickle) trickling.set(socket, options.trickle.source(slot));
      pump();
    });
    socket.on("data", (chunk: Buffer) => {
      if (answered) return;
      answered = true;
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(chunk.toString("latin1"))?.[1];
      bump(stats.answers, status ?? "other");
    });
    socket.on("error", (error) => {
      if (connected) bump(stats.socketErrors, errorCode(error));
      else bump(stats.connectErrors, errorCode(error));
    });
    socket.on("close", () => {
      sockets.delete(socket);
      trickling.delete(socket);
      if (connected) {
        stats.openNow--;
        if (!answered && running) stats.closedUnanswered++;
      } else {
        connecting--;
      }
      if (!running) return;
      schedule(() => {
        waitingToConnect.push(slot);
        pump();
      }, options.reopenDelayMs);
      pump();
    });
  };

  // One timer for every trickling socket: a byte (or a few) each tick.
  let trickleTimer: NodeJS.Timeout | undefined;
  if (options.trickle) {
    const tickMs = Math.max(50, Math.floor(1000 / options.trickle.bytesPerSecond));
    const bytesPerTick = Math.max(1, Math.round((options.trickle.bytesPerSecond * tickMs) / 1000));
    trickleTimer = setInterval(() => {
      for (const [socket, source] of trickling) {
        let piece = "";
        while (piece.length < bytesPerTick) {
          const next = source.next();
          if (next.done) break;
          piece += next.value;
        }
        if (!piece) {
          trickling.delete(socket);
          continue;
        }
        piece = piece.slice(0, bytesPerTick);
        if (socket.writable) {
          socket.write(piece);
          stats.bytesSent += piece.length;
        }
      }
    }, tickMs);
  }

  for (let slot = 0; slot < options.slots; slot++) waitingToConnect.push(slot);
  pump();

  return {
    name: options.name,
    stats,
    async stop() {
      running = false;
      if (trickleTimer) clearInterval(trickleTimer);
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const closing = [...sockets].map((socket) => new Promise<void>((resolve) => socket.once("close", () => resolve())));
      for (const socket of sockets) socket.destroy();
      await Promise.all(closing);
    },
  };
}

/** Yields `text` one character at a time. */
function* characters(text: string): Generator<string> {
  for (const character of text) yield character;
}

/** Header lines without end: a request whose headers never finish. */
function* endlessHeaders(): Generator<string> {
  for (let line = 0; ; line++) yield* characters(`X-Slow-${line}: ${"a".repeat(16)}\r\n`);
}

function requestHead(target: AttackTarget, method: string, path: string, headers: Record<string, string>): string {
  const lines = [`${method} ${path} HTTP/1.1`, `Host: ${target.host}:${target.port}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return `${lines.join("\r\n")}\r\n\r\n`;
}

/**
 * Sockets that announce a body (`Content-Length`, 1 MiB by default) on a public
 * route and then send nothing: each holds whatever the service sets aside for
 * a body on its way.
 */
export function idleAnnouncers(
  target: AttackTarget,
  options: { slots: number; path: string; contentLength: number; maxOpens: number },
): RunningAttack {
  return socketAttack({
    name: "idle announcers",
    target,
    slots: options.slots,
    opening: () =>
      requestHead(target, "POST", options.path, {
        "Content-Type": "application/json",
        "Content-Length": String(options.contentLength),
      }),
    connectParallel: 64,
    reopenDelayMs: 250,
    maxOpens: options.maxOpens,
  });
}

/**
 * Slow clients: most send their headers at once and then their body a few
 * bytes a second; some send even the headers that way (slowloris). Either
 * never finishes within a phase.
 */
export function slowBodies(
  target: AttackTarget,
  options: { slots: number; slowHeaderSlots: number; path: string; bodyBytes: number; bytesPerSecond: number; maxOpens: number },
): RunningAttack {
  const isSlowHeader = (slot: number) => slot >= options.slots;
  const body = JSON.stringify({ email: "slow@example.com", password: "x".repeat(Math.max(0, options.bodyBytes - 48)) });
  return socketAttack({
    name: "slow bodies",
    target,
    slots: options.slots + options.slowHeaderSlots,
    opening: (slot) =>
      isSlowHeader(slot)
        ? ""
        : requestHead(target, "POST", options.path, {
            "Content-Type": "application/json",
            "Content-Length": String(Buffer.byteLength(body)),
          }),
    trickle: {
      source: (slot) =>
        isSlowHeader(slot)
          ? (function* () {
              yield* characters(`GET /healthz HTTP/1.1\r\nHost: ${target.host}:${target.port}\r\n`);
              yield* endlessHeaders();
            })()
          : characters(body),
      bytesPerSecond: options.bytesPerSecond,
    },
    connectParallel: 64,
    reopenDelayMs: 250,
    maxOpens: options.maxOpens,
  });
}

/** Thousands of connections opened as fast as they open, then left idle: no byte is sent. */
export function connectionFlood(
  target: AttackTarget,
  options: { slots: number; connectParallel: number; maxOpens: number },
): RunningAttack {
  return socketAttack({
    name: "connection flood",
    target,
    slots: options.slots,
    opening: () => "",
    connectParallel: options.connectParallel,
    reopenDelayMs: 100,
    maxOpens: options.maxOpens,
  });
}
