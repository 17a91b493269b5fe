// The /api/0/ bodies with text no database can store as sent (a NUL, a lone surrogate),
// shared by the Node server's test (both databases) and the Worker's (D1). Each is a
// 400 naming the problem, and nothing is stored.

/** Project slug every case targets; the caller creates it. */
export const HYGIENE_PROJECT = 'app';
/** A ProGuard mapping the caller uploads to the project first, so association gets past its lookup. */
export const HYGIENE_MAPPING = 'com.example.Foo -> a.a:\n    1:1:void run():10:10 -> a\n';

export interface HygieneCase {
  name: string;
  path: string;
  /** The body, `{uuid}` standing for the uploaded mapping's UUID. */
  body: (uuid: string) => unknown;
}

export const HYGIENE_CASES: HygieneCase[] = [
  {
    name: 'NUL in an organization-form release version',
    path: '/api/0/organizations/o/releases/',
    body: () => ({ version: 'a\u0000b', projects: [HYGIENE_PROJECT] }),
  },
  {
    name: 'a lone surrogate in a release version',
    path: '/api/0/organizations/o/releases/',
    body: () => ({ version: 'v\ud800', projects: [HYGIENE_PROJECT] }),
  },
  {
    name: 'NUL in a release url',
    path: '/api/0/organizations/o/releases/',
    body: () => ({ version: 'ok@1', projects: [HYGIENE_PROJECT], url: 'https://example.com/\u0000' }),
  },
  {
    name: 'NUL in a projects[] slug',
    path: '/api/0/organizations/o/releases/',
    body: () => ({ version: 'ok@2', projects: [`${HYGIENE_PROJECT}\u0000`] }),
  },
  {
    name: 'NUL in a project-form release version',
    path: `/api/0/projects/o/${HYGIENE_PROJECT}/releases/`,
    body: () => ({ version: 'b\u0000' }),
  },
  {
    name: 'a lone surrogate in a project-form release version',
    path: `/api/0/projects/o/${HYGIENE_PROJECT}/releases/`,
    body: () => ({ version: '\udfffx' }),
  },
  {
    name: 'NUL in a ProGuard release_name',
    path: `/api/0/projects/o/${HYGIENE_PROJECT}/files/proguard-artifact-releases/`,
    body: (uuid) => ({ release_name: 'com.example@1\u0000', proguard_uuid: uuid }),
  },
  {
    name: 'a lone surrogate in a ProGuard release_name',
    path: `/api/0/projects/o/${HYGIENE_PROJECT}/files/proguard-artifact-releases/`,
    body: (uuid) => ({ release_name: 'com.example@\ud83d', proguard_uuid: uuid }),
  },
];

export const HYGIENE_ERROR = /NUL character or a lone surrogate/;
