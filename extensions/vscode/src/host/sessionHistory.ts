/**
 * The panel's session history: `kiln/session/list` answers in pages of 50, newest first, so a
 * workspace with more stored sessions shows the newest page, and the picker's "Load older
 * sessions…" entry reads the next one. A refresh (after a turn, a load, History) reads again as
 * many pages as were shown, so older sessions the user opened stay listed.
 */

import type { KilnProtocol } from "../protocol/client";
import type { SessionInfo } from "../protocol/types";

/** A refresh re-reads at most this many pages (1,000 sessions); older ones stay a click away. */
export const MAX_REREAD_PAGES = 20;

export interface ListedSessions {
  sessions: SessionInfo[];
  /** Whether older sessions follow (the picker offers "Load older sessions…"). */
  more: boolean;
}

export class SessionHistory {
  private listed: SessionInfo[] = [];
  private next: string | undefined;
  private pages = 1;
  /** Reads run one after another: a refresh and a "load older" never interleave their pages. */
  private tail: Promise<unknown> = Promise.resolve();

  /** The newest sessions again, as many pages as the panel showed (at most MAX_REREAD_PAGES). */
  refresh(protocol: KilnProtocol): Promise<ListedSessions> {
    return this.queue(async () => {
      const want = Math.min(this.pages, MAX_REREAD_PAGES);
      const listed: SessionInfo[] = [];
      let next: string | undefined;
      let read = 0;
      do {
        const page = await protocol.listSessions(next);
        listed.push(...page.sessions);
        next = page.nextCursor;
        read++;
      } while (next !== undefined && read < want);
      this.listed = unique(listed);
      this.next = next;
      this.pages = read;
      return this.shown();
    });
  }

  /** The next page after the sessions shown; nothing to read once the oldest is listed. */
  older(protocol: KilnProtocol): Promise<ListedSessions> {
    return this.queue(async () => {
      if (this.next === undefined) return this.shown();
      const page = await protocol.listSessions(this.next);
      this.listed = unique([...this.listed, ...page.sessions]);
      this.next = page.nextCursor;
      this.pages++;
      return this.shown();
    });
  }

  private shown(): ListedSessions {
    return { sessions: this.listed, more: this.next !== undefined };
  }

  private queue<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(work, work);
    this.tail = run.catch(() => undefined);
    return run;
  }
}

/** Each session once, where it was first listed (the server lists none twice; this is a guard). */
function unique(sessions: SessionInfo[]): SessionInfo[] {
  const seen = new Set<string>();
  return sessions.filter((s) => {
    if (seen.has(s.sessionId)) return false;
    seen.add(s.sessionId);
    return true;
  });
}
