// What an empty project's pages show instead of empty charts: the DSN and how to set up
// the Sentry SDK of the project's platform (the others one click away). Pure: the
// snippets are text with the DSN in them; the page escapes them like any other text.
// See docs/api.md "Dashboard".
import { html, raw, type Html } from './html.js';

export interface SdkSetup {
  id: string;
  label: string;
  /** The install step (a shell command or a build-file line). */
  install: string;
  /** The initialisation code, with the DSN in it. */
  code: (dsn: string) => string;
}

export const SDK_SETUPS: SdkSetup[] = [
  {
    id: 'android',
    label: 'Android',
    install: '// app/build.gradle\nimplementation "io.sentry:sentry-android:7.18.0"',
    code: (dsn) =>
      `<!-- AndroidManifest.xml, inside <application> -->\n<meta-data android:name="io.sentry.dsn" android:value="${dsn}" />`,
  },
  {
    id: 'ios',
    label: 'iOS',
    install: '// Swift Package Manager: https://github.com/getsentry/sentry-cocoa',
    code: (dsn) => `import Sentry\n\nSentrySDK.start { options in\n    options.dsn = "${dsn}"\n}`,
  },
  {
    id: 'react-native',
    label: 'React Native',
    install: 'npm install @sentry/react-native',
    code: (dsn) =>
      `import * as Sentry from '@sentry/react-native';\n\nSentry.init({ dsn: '${dsn}' });\n\nexport default Sentry.wrap(App);`,
  },
  {
    id: 'flutter',
    label: 'Flutter',
    install: 'flutter pub add sentry_flutter',
    code: (dsn) =>
      `import 'package:sentry_flutter/sentry_flutter.dart';\n\nFuture<void> main() async {\n  await SentryFlutter.init(\n    (options) => options.dsn = '${dsn}',\n    appRunner: () => runApp(const MyApp()),\n  );\n}`,
  },
  {
    id: 'javascript',
    label: 'JavaScript',
    install: 'npm install @sentry/browser',
    code: (dsn) =>
      `import * as Sentry from '@sentry/browser';\n\nSentry.init({ dsn: '${dsn}', release: 'my-app@1.0.0' });`,
  },
  {
    id: 'node',
    label: 'Node',
    install: 'npm install @sentry/node',
    code: (dsn) =>
      `// instrument.js, loaded before the rest of the app\nconst Sentry = require('@sentry/node');\n\nSentry.init({ dsn: '${dsn}' });`,
  },
  {
    id: 'python',
    label: 'Python',
    install: 'pip install sentry-sdk',
    code: (dsn) => `import sentry_sdk\n\nsentry_sdk.init(dsn="${dsn}", release="my-app@1.0.0")`,
  },
  {
    id: 'go',
    label: 'Go',
    install: 'go get github.com/getsentry/sentry-go',
    code: (dsn) =>
      `err := sentry.Init(sentry.ClientOptions{Dsn: "${dsn}"})\nif err != nil {\n\tlog.Fatalf("sentry.Init: %s", err)\n}\ndefer sentry.Flush(2 * time.Second)`,
  },
  {
    id: 'ruby',
    label: 'Ruby',
    install: 'bundle add sentry-ruby',
    code: (dsn) => `Sentry.init do |config|\n  config.dsn = '${dsn}'\nend`,
  },
  {
    id: 'java',
    label: 'Java',
    install: '// build.gradle\nimplementation "io.sentry:sentry:7.18.0"',
    code: (dsn) => `import io.sentry.Sentry;\n\nSentry.init(options -> {\n    options.setDsn("${dsn}");\n});`,
  },
];

/** The SDKs a project platform names first: one for a mobile or web project, the server ones for `backend`. */
const FIRST_FOR: Record<string, string[]> = {
  android: ['android'],
  ios: ['ios'],
  'react-native': ['react-native'],
  flutter: ['flutter'],
  web: ['javascript'],
  backend: ['node', 'python', 'go', 'ruby', 'java'],
};

/** The project platform's SDKs first, the rest after, each once, in SDK_SETUPS order. */
export function setupsFor(platform: string): { first: SdkSetup[]; others: SdkSetup[] } {
  const ids = FIRST_FOR[platform] ?? [];
  return { first: SDK_SETUPS.filter((s) => ids.includes(s.id)), others: SDK_SETUPS.filter((s) => !ids.includes(s.id)) };
}

function snippet(s: SdkSetup, dsn: string): Html {
  return html`<h3>${s.label}</h3><pre><code>${s.install}</code></pre><pre><code>${s.code(dsn)}</code></pre>`;
}

/** The set-up card an empty project's pages show. */
export function setupCard(project: { dsn: string; platform: string }): Html {
  const { first, others } = setupsFor(project.platform);
  return html`<section class="card setup" aria-labelledby="setup-h"><h2 id="setup-h">No events yet: send the first one</h2>
    <p>Give this DSN to the Sentry SDK of your app; events and sessions show here as they arrive.</p>
    <div class="actions"><label for="setup-dsn" class="sub">DSN</label><input id="setup-dsn" readonly value="${project.dsn}" size="60"><button type="button" data-copy="setup-dsn" class="secondary">Copy</button></div>
    ${first.map((s) => snippet(s, project.dsn))}
    <details${first.length === 0 ? raw(' open') : ''}><summary>${first.length === 0 ? 'SDK set-up' : 'Other SDKs'}: ${others.map((s) => s.label).join(', ')}</summary>${others.map((s) => snippet(s, project.dsn))}</details>
  </section>`;
}
