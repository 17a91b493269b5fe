// `faultline users create|list|set-role|disable|reset-password`: accounts from the
// command line, straight on the database (how the first admin is made without the
// setup page). Passwords come from a prompt that does not echo, or with
// --password-stdin from standard input; they never appear in arguments, output or logs.
// Results go to standard output, what happened to standard error; changes are audited
// with the actor "system".
import type { Command } from 'commander';
import { parseRole, parseUserCreate } from '../accounts/input.js';
import { hashPassword } from '../accounts/password.js';
import { AccountInputError, checkPassword, normaliseEmail } from '../accounts/rules.js';
import {
  createInvite,
  createUser,
  findUserByEmail,
  listUsers,
  updateUser,
  type UserRow,
  userJson,
} from '../accounts/store.js';
import type { Store } from '../store/database.js';
import { CliError, type CliContext } from './context.js';

const CLI_AUDIT = { actor: 'system', ip: null, details: { via: 'cli' } };

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** Reads a line from the terminal without echoing it. */
function promptHidden(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    if (!stdin.isTTY) {
      reject(new CliError('no terminal to ask for the password on: pass it with --password-stdin'));
      return;
    }
    process.stderr.write(question);
    let value = '';
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding('utf8');
    const onData = (text: string) => {
      for (const ch of text) {
        if (ch === '\r' || ch === '\n') {
          stdin.setRawMode(false);
          stdin.pause();
          stdin.off('data', onData);
          process.stderr.write('\n');
          resolve(value);
          return;
        }
        if (ch === '\u0003') {
          stdin.setRawMode(false);
          reject(new CliError('cancelled'));
          return;
        }
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.on('data', onData);
  });
}

async function readPassword(fromStdin: boolean): Promise<string> {
  if (fromStdin) return checkPassword(await readStdin());
  const first = await promptHidden('Password (at least 10 characters): ');
  checkPassword(first);
  const again = await promptHidden('Password again: ');
  if (again !== first) throw new CliError('the passwords differ');
  return first;
}

async function userByEmail(store: Store, raw: string): Promise<UserRow> {
  const email = normaliseEmail(raw);
  const user = await findUserByEmail(store.db, email);
  if (!user) throw new CliError(`there is no user ${email}`);
  return user;
}

export function register(program: Command, cli: CliContext): void {
  const users = program.command('users').description('manage the accounts that sign in to the dashboard and the API');

  /** Opens the database, runs `fn`, closes it; bad input becomes a plain message. */
  async function withStore(fn: (store: Store) => Promise<void>): Promise<void> {
    const config = cli.config();
    const store = await cli.openMigratedStore(config);
    try {
      await fn(store);
    } catch (err) {
      if (err instanceof AccountInputError) throw new CliError(err.message);
      throw err;
    } finally {
      await store.close();
    }
  }

  users
    .command('create')
    .description('create a user (the first admin: --role admin)')
    .requiredOption('--email <email>', 'their email (how they sign in)')
    .option('--name <name>', 'display name (default: the part of the email before @)')
    .option('--role <role>', 'viewer, member or admin', 'viewer')
    .option('--password-stdin', 'read the password from standard input instead of a prompt')
    .option('--invite', 'set no password: print a one-time invite link (valid 7 days) instead')
    .action(async (o: { email: string; name?: string; role: string; passwordStdin?: boolean; invite?: boolean }) => {
      await withStore(async (store) => {
        const input = parseUserCreate({ email: o.email, name: o.name, role: o.role });
        const password = o.invite ? null : await readPassword(Boolean(o.passwordStdin));
        const now = Date.now();
        const user = await createUser(
          store,
          { ...input, passwordHash: password === null ? null : await hashPassword(password) },
          now,
          CLI_AUDIT,
        );
        process.stderr.write(`Created ${user.role} ${user.email} (id ${Number(user.id)})\n`);
        if (o.invite) {
          const invite = await createInvite(store.db, Number(user.id), now);
          const base = (cli.config().publicUrl ?? '').replace(/\/+$/, '');
          process.stdout.write(`${base}/login/invite/${invite.token}\n`);
          if (!base) process.stderr.write('PUBLIC_URL is not set: put the server’s address before the path above.\n');
        }
      });
    });

  users
    .command('list')
    .description('list users (JSON lines with --json)')
    .option('--json', 'one JSON object per line')
    .action(async (o: { json?: boolean }) => {
      await withStore(async (store) => {
        const rows = (await listUsers(store.db)).map(userJson);
        for (const u of rows) {
          process.stdout.write(
            o.json
              ? `${JSON.stringify(u)}\n`
              : `${u.id}\t${u.email}\t${u.role}${u.disabled ? '\tdisabled' : ''}\t${u.name}\n`,
          );
        }
        process.stderr.write(`${rows.length} user${rows.length === 1 ? '' : 's'}\n`);
      });
    });

  users
    .command('set-role')
    .description('change a user’s role')
    .argument('<email>')
    .argument('<role>', 'viewer, member or admin')
    .action(async (email: string, role: string) => {
      await withStore(async (store) => {
        const user = await userByEmail(store, email);
        await updateUser(store, user, { role: parseRole(role) }, Date.now(), CLI_AUDIT);
        process.stderr.write(`${user.email} is now ${role}\n`);
      });
    });

  users
    .command('disable')
    .description('disable a user: their sessions end and their tokens stop working (--enable to undo)')
    .argument('<email>')
    .option('--enable', 'enable the user again')
    .action(async (email: string, o: { enable?: boolean }) => {
      await withStore(async (store) => {
        const user = await userByEmail(store, email);
        await updateUser(store, user, { disabled: !o.enable }, Date.now(), CLI_AUDIT);
        process.stderr.write(`${user.email} is ${o.enable ? 'enabled' : 'disabled'}\n`);
      });
    });

  users
    .command('reset-password')
    .description('set a new password for a user (their sessions end)')
    .argument('<email>')
    .option('--password-stdin', 'read the password from standard input instead of a prompt')
    .action(async (email: string, o: { passwordStdin?: boolean }) => {
      await withStore(async (store) => {
        const user = await userByEmail(store, email);
        const password = await readPassword(Boolean(o.passwordStdin));
        await updateUser(store, user, { passwordHash: await hashPassword(password) }, Date.now(), CLI_AUDIT);
        process.stderr.write(`Password of ${user.email} changed; their sessions have ended\n`);
      });
    });
}
