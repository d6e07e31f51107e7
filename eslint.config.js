import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'test-results/**', '.scratch/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['bin/**/*.js', 'scripts/**/*.mjs', 'eslint.config.js'],
    languageOptions: { globals: { process: 'readonly', URL: 'readonly', console: 'readonly' } },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // The Kafka port: only src/kafka/ may talk to a Kafka client (src/kafka/port.ts is the way in).
    files: ['**/*.ts'],
    ignores: ['src/kafka/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: [
        { name: 'kafkajs', message: 'kafkajs is not a dependency: use the Kafka port (src/kafka/index.ts)' },
        { name: '@confluentinc/kafka-javascript', message: 'only src/kafka/ imports the Kafka client: use the port (src/kafka/index.ts)' },
      ] }],
    },
  },
  {
    // The pure domain: no I/O, no clock, no randomness, no logger.
    files: ['src/plan/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: ['kafkajs', '@confluentinc/kafka-javascript', 'pino', 'fs', 'node:fs', 'node:fs/promises', 'node:net', 'node:http', 'node:child_process', '@kafkajs/confluent-schema-registry'] }],
      'no-restricted-properties': ['error',
        { object: 'Date', property: 'now', message: 'time arrives as data' },
        { object: 'Math', property: 'random', message: 'randomness arrives as data' }],
    },
  },
);
