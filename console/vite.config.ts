import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The operator console: built into dist/console by `npm run build` and served by the service at /console.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  // `npm run console:dev`: the APIs of a service started with `npm start` on :8080.
  server: { proxy: { '/api': 'http://127.0.0.1:8080' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: true,
    reportCompressedSize: false,
  },
});
