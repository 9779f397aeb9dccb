import { Elysia } from 'elysia'
import { checkAccept } from '../jsonapi/media-type'

/** Answers 406 before any work when the client accepts no representation the service has. */
export const acceptNegotiation = new Elysia({ name: 'jsonapi-accept' }).onRequest(({ request }) => {
  const refused = checkAccept(request.headers.get('accept'))
  if (refused) throw refused
})
