// `npm run lint` runs dependency-cruiser with these rules over every TypeScript import, `import type`
// included: a type import still ties two modules together. './x.js' in TypeScript source resolves to x.ts.
//
// - no-circular: no import cycles (issue 23: layers without cycles).
// - The floors (docs/design.md, "Floors"; issue 31): the library (src/) imports nothing above it, the
//   services and the stack launcher import only the library, the package entry only the library and the
//   services, the programs (cli/, demo/) anything of the product but nothing of the tools (test/, bench/,
//   chaos/, scripts/, examples/). One rule per row of the table there.
//
// `dependencyTypes: ['local']` limits a floor rule to imports of the project's own files (npm packages
// and Node's built-ins are not floors). test/lint/cycles.unit.test.ts and test/lint/floors.unit.test.ts
// run these rules on fixtures that break each one and on fixtures that keep it.
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
    {
      name: 'plan-imports-only-plan',
      severity: 'error',
      comment: 'src/plan/ is the pure domain: it imports only src/plan/ and Node built-ins (no other library module, no npm package).',
      from: { path: '^src/plan/' },
      to: { pathNot: '^src/plan/', dependencyTypesNot: ['core'] },
    },
    {
      name: 'library-imports-only-library',
      severity: 'error',
      comment: 'src/ is the library: it imports only src/ (and npm packages); what the floor above needs from it, it gets by importing src/, never the other way round.',
      from: { path: '^src/' },
      to: { pathNot: '^src/', dependencyTypes: ['local'] },
    },
    {
      name: 'services-import-only-library',
      severity: 'error',
      comment: 'executor/, projector/ and stack/ (the local stack launcher) import src/ and their own folder only: not each other, not cli/, demo/, the package entry or the tools.',
      from: { path: '^(executor|projector|stack)/' },
      to: { pathNot: ['^$1/', '^src/'], dependencyTypes: ['local'] },
    },
    {
      name: 'entry-imports-library-and-services',
      severity: 'error',
      comment: 'The package entry (index.ts) re-exports src/, executor/ and projector/ only.',
      from: { path: '^index\\.ts$' },
      to: { pathNot: '^(src|executor|projector)/', dependencyTypes: ['local'] },
    },
    {
      name: 'programs-import-no-tools',
      severity: 'error',
      comment: 'cli/ and demo/ (the programs) may import any floor of the product, but nothing of test/, bench/, chaos/, scripts/ or examples/.',
      from: { path: '^(cli|demo)/' },
      to: { pathNot: '^(index\\.ts$|src/|executor/|projector/|stack/|cli/|demo/)', dependencyTypes: ['local'] },
    },
  ],
  options: {
    // Type-only imports count (TypeScript erases them, but they are dependencies all the same).
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    // The fixtures of the rules' own tests break them on purpose.
    exclude: { path: '^test/lint/fixtures/' },
  },
};
