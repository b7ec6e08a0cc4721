/**
 * Slash commands ("writs") in a model's reply. A writ is a line whose first
 * non-blank text is `/verb` (outside fenced code blocks). Block writs run to
 * a terminator line: `/write <path>` … `/endwrite`, `/parallel` … `/endparallel`.
 *
 * The scanner reads the reply as it streams and hands back, chunk by chunk,
 * the text the user may see: ordinary text passes through at once, while a
 * line that starts with `/` (and everything inside a block) is held back.
 */

export interface Writ {
  verb: string;
  /** The rest of the command line, trimmed. */
  args: string;
  /** A block writ's lines between the command and its terminator. */
  body?: string;
  /** Why the writ cannot run as written (an unterminated block). */
  error?: string;
}

/** Verbs whose command line opens a block, and the line that ends it. */
export const BLOCK_VERBS: Readonly<Record<string, string>> = { write: '/endwrite', parallel: '/endparallel' };

const COMMAND = /^\s*\/([a-z][a-z0-9_-]*)(?:[ \t]+(.*))?$/;
const FENCE = /^\s*(```|~~~)/;

/** Parses one command line: `{ verb, args }`, or null when the line is not a command. */
export function parseCommandLine(line: string): { verb: string; args: string } | null {
  const m = COMMAND.exec(line.replace(/\r$/, ''));
  if (!m) return null;
  return { verb: m[1] ?? '', args: (m[2] ?? '').trim() };
}

export class WritScanner {
  private line = '';
  /** How much of `line` has been handed out as visible text. */
  private shown = 0;
  /** The current line is being held back (a command, or a line inside a block). */
  private held = false;
  private inFence = false;
  private block: { verb: string; args: string; lines: string[] } | undefined;
  private readonly writs: Writ[] = [];
  private visible = '';

  /**
   * Feeds a chunk of the reply; returns the text that may be shown now.
   * Linear in the chunk: it is taken a line's piece at a time, never a
   * character at a time against the whole line (a reply of one long line
   * costs what its length does).
   */
  push(chunk: string): string {
    let out = '';
    let from = 0;
    while (from < chunk.length) {
      const nl = chunk.indexOf('\n', from);
      const to = nl === -1 ? chunk.length : nl;
      out += this.feed(chunk.slice(from, to));
      if (nl === -1) break;
      this.line += '\n';
      out += this.endLine();
      from = nl + 1;
    }
    this.visible += out;
    return out;
  }

  /** Text of the current line (no newline in it): what of it may be shown now. */
  private feed(text: string): string {
    if (text === '') return '';
    this.line += text;
    if (this.held) return '';
    if (this.block) {
      this.held = true;
      return '';
    }
    if (this.shown > 0) {
      this.shown += text.length;
      return text;
    }
    // Undecided so far (the line was blank): its first non-blank character decides.
    const first = text.search(/\S/);
    if (first === -1) return ''; // leading blanks: undecided yet
    if (!this.inFence && text[first] === '/') {
      this.held = true;
      return '';
    }
    this.shown = this.line.length;
    return this.line;
  }

  /** Ends the reply: returns the remaining visible text and every writ, in order. */
  end(): { tail: string; writs: Writ[]; visible: string } {
    let tail = '';
    if (this.line.length > 0) tail = this.endLine();
    if (this.block) {
      const { verb, args, lines } = this.block;
      this.writs.push({
        verb,
        args,
        body: lines.join('\n'),
        error: `unterminated /${verb} block (end it with ${BLOCK_VERBS[verb]} on its own line)`,
      });
      this.block = undefined;
    }
    this.visible += tail;
    return { tail, writs: this.writs, visible: this.visible };
  }

  private endLine(): string {
    const line = this.line.replace(/\n$/, '');
    const hadNewline = this.line.endsWith('\n');
    const wasHeld = this.held;
    const shown = this.shown;
    this.line = '';
    this.shown = 0;
    this.held = false;
    if (this.block) {
      if (line.trim() === BLOCK_VERBS[this.block.verb]) {
        const { verb, args, lines } = this.block;
        this.writs.push({ verb, args, body: lines.join('\n') });
        this.block = undefined;
      } else {
        this.block.lines.push(line.replace(/\r$/, ''));
      }
      return '';
    }
    if (wasHeld) {
      const cmd = parseCommandLine(line);
      if (!cmd) return line + (hadNewline ? '\n' : ''); // `/usr/bin …`: ordinary text after all
      if (BLOCK_VERBS[cmd.verb]) this.block = { ...cmd, lines: [] };
      else if (!Object.values(BLOCK_VERBS).includes(`/${cmd.verb}`)) this.writs.push(cmd);
      return '';
    }
    if (FENCE.test(line)) this.inFence = !this.inFence;
    // A blank line was never shown while undecided; any other line was shown up to its newline.
    const rest = shown === 0 ? line : '';
    return rest + (hadNewline ? '\n' : '');
  }
}

/** Parses a whole reply at once. */
export function parseWrits(text: string): { visible: string; writs: Writ[] } {
  const s = new WritScanner();
  s.push(text);
  const { visible, writs } = s.end();
  return { visible, writs };
}
