; Shell (bash, POSIX sh): functions, ``name() { ... }`` and ``function name { ... }``;
; a command's name is a call (of a function or of a program).
(function_definition name: (word) @name body: (compound_statement) @body) @definition.function
(function_definition name: (word) @name) @definition.function

(command name: (command_name (word) @reference.call))
