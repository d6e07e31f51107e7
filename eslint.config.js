import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'test-results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['bin/**/*.js', 'eslint.config.js'],
    languageOptions: { globals: { process: 'readonly', URL: 'readonly', console: 'readonly' } },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // The pure domain: no I/O, no clock, no randomness, no logger.
    files: ['src/plan/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: ['kafkajs', 'pino', 'fs', 'node:fs', 'node:fs/promises', 'node:net', 'node:http', 'node:child_process', '@kafkajs/confluent-schema-registry'] }],
      'no-restricted-properties': ['error',
        { object: 'Date', property: 'now', message: 'time arrives as data' },
        { object: 'Math', property: 'random', message: 'randomness arrives as data' }],
    },
  },
);
