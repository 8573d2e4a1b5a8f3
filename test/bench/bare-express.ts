// The framework's ceiling for the benchmark: Express 5 answering {"ok":true}, nothing else.
import express from 'express';

const app = express();
app.get('/', (_req, res) => {
  res.json({ ok: true });
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
