// Whether any user exists: it decides whether the API is open and whether the
// dashboard still takes an API-key sign-in. One per app (not process-wide): once a
// user is seen the answer stays yes, so a busy instance asks the database only
// while it has no users.
import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { anyUserExists } from './store.js';

export class UserPresence {
  private seen = false;

  constructor(private readonly db: Kysely<Database>) {}

  async exists(): Promise<boolean> {
    if (this.seen) return true;
    this.seen = await anyUserExists(this.db);
    return this.seen;
  }
}
