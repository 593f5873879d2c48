# Lexical errors: characters tdsl does not use get the tdsl spelling, bad
# and bad escapes are caught (an unterminated string cannot be tested
# here: the directive would be inside it), and the lexer goes on.
fn main() {
  let a = true && false                # error: unexpected character '&&'
  let b = 1
  let c = !a                           # error: unexpected character '!'
  let d = 2
  print('single')                      # error: strings use double quotes
  let e = 3
  print("bad \q escape")               # error: unknown escape '\q'
  let f = 4
  let g = 99999999999999999999         # error: integer literal is too large
  let h = 5
}
# help: write 'and'
# help: write 'not'
# help: write "single"
# help: the escapes are \n \t \\ and \"
