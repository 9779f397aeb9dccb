import { render } from 'preact'
import { App } from './app'
import { followHeadings } from './page-heading'
import { startRouter } from './router'

startRouter()
const root = document.getElementById('root')
if (root) {
  render(<App />, root)
  const main = document.getElementById('main')
  if (main) followHeadings(main)
}
