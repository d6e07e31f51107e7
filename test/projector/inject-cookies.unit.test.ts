// package.json overrides light-my-request's cookie (2.x wants Node >= 22) with cookie 1.1.1, whose
// stringifySetCookie is the one function light-my-request calls. fastify's inject goes through it: this
// fails if a fastify or light-my-request update starts using a cookie 2 API that 1.1.1 lacks.
import Fastify from 'fastify';
import { expect, it } from 'vitest';

it('fastify inject encodes request cookies with the overridden cookie package', async () => {
  const app = Fastify();
  app.get('/plans/p1', async (req) => ({ cookie: req.headers.cookie ?? null }));
  const res = await app.inject({
    method: 'GET',
    url: '/plans/p1',
    cookies: [
      { name: 'token', value: 'a b;c' },
      { name: 'scoped', value: '1', path: '/plans' },
      { name: 'elsewhere', value: '2', path: '/other' },
    ],
  });
  expect(res.json()).toEqual({ cookie: 'token=a%20b%3Bc; scoped=1' });
  await app.close();
});
