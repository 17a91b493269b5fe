// A real SMTP server for the email alert tests (smtp-server): it offers STARTTLS with
// its built-in self-signed certificate, allows AUTH only after STARTTLS, checks one user
// and password, and keeps every message parsed by mailparser with what the session saw
// (TLS on or not, the authenticated user, the envelope).
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  mail: ParsedMail;
  /** STARTTLS (or TLS) was on when the message was sent. */
  secure: boolean;
  user: string | undefined;
  envelope: { from: string; to: string[] };
}

export class SmtpSink {
  readonly messages: ReceivedMail[] = [];
  private server!: SMTPServer;
  port = 0;
  /** Refuse the next messages with this SMTP answer. */
  refuse: { code: number; message: string } | null = null;

  constructor(
    readonly user = 'alerts@faultline.test',
    readonly password = 'p@ss word/+:1',
  ) {}

  static async start(): Promise<SmtpSink> {
    const sink = new SmtpSink();
    sink.server = new SMTPServer({
      authMethods: ['PLAIN', 'LOGIN'],
      allowInsecureAuth: false,
      logger: false,
      onAuth(auth, _session, callback) {
        if (auth.username === sink.user && auth.password === sink.password)
          return callback(null, { user: auth.username });
        callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
      },
      onData(stream, session, callback) {
        simpleParser(stream)
          .then((mail) => {
            if (sink.refuse)
              return callback(Object.assign(new Error(sink.refuse.message), { responseCode: sink.refuse.code }));
            sink.messages.push({
              mail,
              secure: session.secure,
              user: session.user as string | undefined,
              envelope: {
                from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
                to: session.envelope.rcptTo.map((r) => r.address),
              },
            });
            callback();
          })
          .catch(callback);
      },
    });
    await new Promise<void>((resolve) => sink.server.listen(0, '127.0.0.1', () => resolve()));
    sink.port = (sink.server.server.address() as AddressInfo).port;
    return sink;
  }

  /** SMTP_URL for this server: STARTTLS on a plain port, its self-signed certificate allowed. */
  url(password = this.password): string {
    return `smtp://${encodeURIComponent(this.user)}:${encodeURIComponent(password)}@127.0.0.1:${this.port}/?tls.rejectUnauthorized=false`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
