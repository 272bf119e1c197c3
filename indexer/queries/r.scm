; R: a function assigned to a name (``f <- function(x) { }``, ``f = function(x) x``) is a
; function. R has no class syntax (S4/R6 classes are calls): their functions are arguments.
(binary_operator lhs: (identifier) @name
  rhs: (function_definition body: (braced_expression) @body)) @definition.function
(binary_operator lhs: (identifier) @name rhs: (function_definition)) @definition.function

(call function: (identifier) @reference.call)
(call function: (namespace_operator rhs: (identifier) @reference.call))
