// faultline's version, for what every edition reports (an export's meta line). The same
// as package.json's `version` (test/editions/workers/transfer.test.ts checks): the Worker cannot
// read package.json at run time, and bundling it would carry the dependency list along.
export const VERSION = '0.1.0';
