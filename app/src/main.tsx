import { render } from 'preact'
import { App } from './app'
import { startRouter } from './router'

startRouter()
const root = document.getElementById('root')
if (root) render(<App />, root)
