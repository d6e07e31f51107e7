// Import cycles fail `npm run lint` (issue 23: layers without cycles). dependency-cruiser reads every
// TypeScript import, `import type` included: a cycle made of type imports still ties two modules into
// one layer, and most of the cycles this rule was written for were type-only. './x.js' in TypeScript
// source resolves to x.ts. test/lint/cycles.unit.test.ts runs this file's rules on fixtures with a
// cycle and without one.
/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle: move what both sides need into a module that imports neither.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    // Type-only imports count (TypeScript erases them, but they are dependencies all the same).
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    // The fixtures of the rule's own test hold a cycle on purpose.
    exclude: { path: '^test/lint/fixtures/' },
  },
};
